//! Trusted code and the program-writable set.
//!
//! The *program-writable set* is everything a program can change through
//! any tool of any profile: the workspace (minus its control directory
//! `.lackpy/`, which no program and no child jail can write). Nothing lackpy
//! executes, imports or trusts (command programs and scripts, MCP server
//! programs and scripts, python tool modules and interpreters) may lie in
//! that set or be reachable from it through a symlink: a program could
//! rewrite it and have lackpy run its code with the tool's rights. Such a
//! configuration is refused, naming the file.
//!
//! What a writable MCP server's `write_paths` name is program-writable too:
//! the front end registers them when it loads the configuration
//! ([`register_write_paths`]).

use std::path::{Path, PathBuf};
use std::sync::RwLock;

/// `write_paths` of the configured MCP servers, per workspace.
static WRITE_PATHS: RwLock<Vec<(PathBuf, Vec<PathBuf>)>> = RwLock::new(Vec::new());

/// Record the `write_paths` of `workspace`'s configured MCP servers
/// (absolute, as the servers' jails resolve them): they belong to the
/// program-writable set of that workspace.
pub fn register_write_paths(workspace: &Path, paths: Vec<PathBuf>) {
    let mut g = WRITE_PATHS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    g.retain(|(w, _)| w != workspace);
    if !paths.is_empty() {
        g.push((workspace.to_path_buf(), paths));
    }
}

/// Whether `path` lies in the program-writable set of `workspace`: the
/// path as written (a symlink in the workspace can be retargeted by a
/// program) or the file it resolves to is inside the workspace but not
/// inside its control directory. `workspace` must be canonical.
pub fn in_writable_set(path: &Path, workspace: &Path) -> bool {
    let control = workspace.join(lackpy_beneath::CONTROL_DIR);
    let inside = |p: &Path| p.starts_with(workspace) && !p.starts_with(&control);
    let written = if path.is_absolute() {
        lexical(path)
    } else {
        lexical(&workspace.join(path))
    };
    let canonical = std::fs::canonicalize(path).ok();
    if inside(&written) || canonical.as_deref().is_some_and(inside) {
        return true;
    }
    // A path outside that resolves, through a symlink in the workspace, to
    // a file outside again: a program can retarget that link.
    if links_on_the_way(&written).iter().any(|l| inside(l)) {
        return true;
    }
    let g = WRITE_PATHS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    g.iter()
        .filter(|(w, _)| w == workspace)
        .flat_map(|(_, roots)| roots)
        .any(|root| {
            let canon_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
            written.starts_with(root)
                || written.starts_with(&canon_root)
                || canonical
                    .as_deref()
                    .is_some_and(|c| c.starts_with(root) || c.starts_with(&canon_root))
        })
}

/// File endings of scripts an interpreter runs.
pub const SCRIPT_EXTENSIONS: &[&str] = &[
    "py", "pyc", "js", "mjs", "cjs", "ts", "mts", "sh", "bash", "rb", "pl", "php", "lua", "jar",
];

/// The script the argument `arg` of a configured command line (a command
/// tool's literal argv item, an MCP server's `args` entry) names, when it
/// lies in the program-writable set of `workspace`: an existing regular
/// file with an execute bit or a script ending ([`SCRIPT_EXTENSIONS`]),
/// found at `resolve(text)` (where the child will find it). An interpreter
/// given it would run code a program wrote. `--opt=value` is judged by
/// `value`; other arguments starting with `-` and directories or data files
/// are not scripts.
pub fn script_in_writable_set(
    arg: &str,
    workspace: &Path,
    resolve: impl FnOnce(&str) -> PathBuf,
) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let text = arg.split_once('=').map_or(arg, |(_, v)| v);
    if text.is_empty() || text.starts_with('-') {
        return None;
    }
    let path = resolve(text);
    let meta = std::fs::metadata(&path).ok()?;
    let script = meta.is_file()
        && (meta.permissions().mode() & 0o111 != 0
            || path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| SCRIPT_EXTENSIONS.contains(&e)));
    (script && in_writable_set(&path, workspace)).then_some(path)
}

/// The variable that keeps Python (3.11 and later) from putting the
/// working directory first on `sys.path` when it runs `-m module` or
/// `-c code`. Children run in the workspace, so without it a program that
/// wrote `module.py` (or `json.py`, any module the child imports) there
/// would have its code run by `python3 -m module`.
pub const PYTHON_SAFE_PATH: &str = "PYTHONSAFEPATH";

/// Whether the command line `args` (without the program) may start Python
/// with `-m` or `-c` (directly, or through a shell's `-c`), so the child
/// needs [`PYTHON_SAFE_PATH`] set. Harmless for any other program.
pub fn needs_python_safe_path<S: AsRef<str>>(args: &[S]) -> bool {
    args.iter().any(|a| {
        let a = a.as_ref();
        a.starts_with("-m") || a.starts_with("-c") || a.contains(" -m") || a.contains(" -c")
    })
}

/// What a child started with the workspace as its working directory needs
/// so that neither it nor the package launcher it is takes code or
/// configuration from there (a program may have written any of it):
///
/// - Python with `-m`/`-c`: [`PYTHON_SAFE_PATH`] (the working directory is
///   not put on `sys.path`);
/// - `npx`, `npm exec`/`npm x`: `--prefix=<npm's installation>` before the
///   configured arguments. Without it npm takes the workspace as the
///   project: its `.npmrc` (`node-options = --require=./x.js` runs code in
///   every node the launcher starts; `script-shell`, `cache`, `registry`)
///   and its `node_modules/.bin` (a program-written package of the name
///   asked for). The working directory stays the workspace. A `--prefix`
///   the configuration gives is kept (the operator's choice);
/// - `uvx`, `uv tool …`: `UV_NO_CONFIG=1` (no `uv.toml` or `pyproject.toml`
///   settings from the workspace: an index, a Python to use).
///
/// `name` is the program as configured (`npx`), `program` where it was
/// found on `PATH`. Other launchers that read their working directory
/// (`pnpm`, `yarn`, `bunx`, `make`, `uv run`) cannot be given a safe
/// project here: they are refused (`launchers.rs`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CwdGuard {
    /// Arguments to put before the configured ones.
    pub args_before: Vec<String>,
    /// Environment variables to set.
    pub env: Vec<(&'static str, &'static str)>,
}

/// The [`CwdGuard`] of a command line (see there).
pub fn cwd_guard<S: AsRef<str>>(name: &str, program: &Path, args: &[S]) -> CwdGuard {
    let mut g = CwdGuard::default();
    if needs_python_safe_path(args) {
        g.env.push((PYTHON_SAFE_PATH, "1"));
    }
    let base = crate::launchers::base(name);
    let first_positional = args.iter().map(AsRef::as_ref).find(|a| !a.starts_with('-'));
    let has_prefix = args.iter().any(|a| {
        let a = a.as_ref();
        a == "--prefix" || a.starts_with("--prefix=") || a == "-C"
    });
    let npm_exec =
        base == "npx" || (base == "npm" && matches!(first_positional, Some("exec" | "x")));
    if npm_exec && !has_prefix {
        let root = crate::childjail::install_root(program);
        g.args_before.push(format!("--prefix={}", root.display()));
    }
    if base == "uvx" || (base == "uv" && matches!(first_positional, Some("tool" | "x"))) {
        g.env.push(("UV_NO_CONFIG", "1"));
    }
    g
}

/// What the operator should hear when `guard` keeps a launcher from a
/// workspace package: `npx` given npm's own `--prefix` no longer runs a
/// server installed in `ws/node_modules`; it takes the package from npm's
/// installation or fetches it from the registry instead. Not silent.
pub fn workspace_packages_ignored(guard: &CwdGuard, ws: &Path) -> Option<String> {
    let prefix = guard
        .args_before
        .iter()
        .find(|a| a.starts_with("--prefix="))?;
    let local = ws.join("node_modules");
    std::fs::symlink_metadata(&local).ok()?;
    Some(format!(
        "npm runs with {prefix}: packages in {} are not used (a program may \
         have written them); install the server globally (npm install -g) or \
         give --prefix in its args to choose another installation",
        local.display()
    ))
}

/// Most symlinks [`links_on_the_way`] follows (Linux's own limit for one
/// path walk).
const MAX_LINK_HOPS: usize = 40;

/// The parts of `path` a walk takes: names and `..` (the root and `.`
/// dropped).
fn walk_parts(path: &Path) -> impl Iterator<Item = std::ffi::OsString> + '_ {
    use std::path::Component;
    path.components().filter_map(|c| match c {
        Component::Normal(n) => Some(n.to_os_string()),
        Component::ParentDir => Some("..".into()),
        _ => None,
    })
}

/// Where every symlink met while resolving the absolute `path` lies (each
/// link's own path, its parent resolved), in the order met; at most
/// [`MAX_LINK_HOPS`]. A missing component ends nothing: the rest is
/// walked lexically.
fn links_on_the_way(path: &Path) -> Vec<PathBuf> {
    use std::collections::VecDeque;
    use std::ffi::OsString;
    let mut out = Vec::new();
    let mut todo: VecDeque<OsString> = walk_parts(path).collect();
    let mut cur = PathBuf::from("/");
    while let Some(c) = todo.pop_front() {
        if c == ".." {
            cur.pop();
            continue;
        }
        let next = cur.join(&c);
        let is_link = std::fs::symlink_metadata(&next).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            cur = next;
            continue;
        }
        if out.len() >= MAX_LINK_HOPS {
            break;
        }
        let Ok(target) = std::fs::read_link(&next) else {
            break;
        };
        out.push(next);
        if target.is_absolute() {
            cur = PathBuf::from("/");
        }
        let comps: Vec<OsString> = walk_parts(&target).collect();
        for c in comps.into_iter().rev() {
            todo.push_front(c);
        }
    }
    out
}

/// `p` with `.` and `..` components folded away (no filesystem access).
fn lexical(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The error for trusted code found in the program-writable set.
pub fn refusal(what: &str, path: &Path, workspace: &Path) -> String {
    format!(
        "configuration error: {what} {} lies in the workspace {} (or is reached through a symlink there), \
         which programs can write: lackpy never runs or imports code from it. Move it outside the workspace \
         or into {}/tools/ (python tool modules)",
        path.display(),
        workspace.display(),
        workspace.join(lackpy_beneath::CONTROL_DIR).display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_safe_path_for_dash_m_and_dash_c() {
        assert!(needs_python_safe_path(&["-m", "server"]));
        assert!(needs_python_safe_path(&["-mserver"]));
        assert!(needs_python_safe_path(&["-c", "import x"]));
        assert!(needs_python_safe_path(&["-u", "-m", "x"]));
        assert!(needs_python_safe_path(&["-c", "exec python3 -m x"]));
        assert!(!needs_python_safe_path(&[
            "/opt/srv/server.py",
            "--port",
            "1"
        ]));
        assert!(!needs_python_safe_path::<&str>(&[]));
    }

    #[test]
    fn an_ignored_workspace_package_is_said() {
        let ws = tempfile::tempdir().unwrap();
        let npx = cwd_guard("npx", Path::new("/usr/bin/npx"), &["-y", "srv"]);
        assert_eq!(workspace_packages_ignored(&npx, ws.path()), None);
        std::fs::create_dir(ws.path().join("node_modules")).unwrap();
        let note = workspace_packages_ignored(&npx, ws.path()).unwrap_or_default();
        assert!(
            note.contains("--prefix=/usr") && note.contains("node_modules"),
            "{note}"
        );
        let node = cwd_guard("node", Path::new("/usr/bin/node"), &["srv.js"]);
        assert_eq!(workspace_packages_ignored(&node, ws.path()), None);
    }

    #[test]
    fn launchers_take_nothing_from_the_working_directory() {
        let npx = Path::new("/usr/bin/npx");
        let g = cwd_guard("npx", npx, &["-y", "@scope/server", "."]);
        assert_eq!(g.args_before, ["--prefix=/usr"]);
        assert!(g.env.is_empty());
        let g = cwd_guard("/usr/bin/npm", Path::new("/usr/bin/npm"), &["exec", "srv"]);
        assert_eq!(g.args_before, ["--prefix=/usr"]);
        let g = cwd_guard("npm", Path::new("/usr/bin/npm"), &["--yes", "x", "srv"]);
        assert_eq!(g.args_before, ["--prefix=/usr"]);
        // The operator's own prefix stays; other npm commands are theirs.
        assert_eq!(
            cwd_guard("npx", npx, &["--prefix=/opt/p", "srv"]),
            CwdGuard::default()
        );
        assert_eq!(
            cwd_guard("npx", npx, &["-C", "/opt/p", "srv"]),
            CwdGuard::default()
        );
        assert_eq!(
            cwd_guard("npm", npx, &["run", "serve"]),
            CwdGuard::default()
        );
        let uv = Path::new("/usr/local/bin/uvx");
        assert_eq!(
            cwd_guard("uvx", uv, &["mcp-server-git"]).env,
            [("UV_NO_CONFIG", "1")]
        );
        assert_eq!(
            cwd_guard("uv", uv, &["tool", "run", "x"]).env,
            [("UV_NO_CONFIG", "1")]
        );
        assert!(cwd_guard("uv", uv, &["run", "x.py"]).env.is_empty());
        assert_eq!(
            cwd_guard("python3", Path::new("/usr/bin/python3"), &["-m", "srv"]).env,
            [(PYTHON_SAFE_PATH, "1")]
        );
        assert_eq!(
            cwd_guard("node", Path::new("/usr/bin/node"), &["/opt/s.js"]),
            CwdGuard::default()
        );
    }

    #[test]
    fn the_set_is_the_workspace_minus_its_control_dir() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".lackpy/tools")).unwrap();
        std::fs::write(ws.join("evil.sh"), "").unwrap();
        std::fs::write(ws.join(".lackpy/tools/ok.py"), "").unwrap();
        assert!(in_writable_set(&ws.join("evil.sh"), &ws));
        assert!(in_writable_set(Path::new("evil.sh"), &ws));
        assert!(!in_writable_set(&ws.join(".lackpy/tools/ok.py"), &ws));
        assert!(!in_writable_set(Path::new("/usr/bin/env"), &ws));
        // A symlink in the control dir pointing into the workspace.
        std::os::unix::fs::symlink(ws.join("evil.sh"), ws.join(".lackpy/tools/l.sh")).unwrap();
        assert!(in_writable_set(&ws.join(".lackpy/tools/l.sh"), &ws));
        // A symlink in the workspace pointing outside: retargetable.
        std::os::unix::fs::symlink("/usr/bin/env", ws.join("env")).unwrap();
        assert!(in_writable_set(&ws.join("env"), &ws));
        assert!(in_writable_set(&ws.join("sub/../evil.sh"), &ws));
        // A path outside resolving through a link in the workspace that
        // points outside again: the program can retarget the link.
        let bin = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(ws.join("env"), bin.path().join("tool")).unwrap();
        assert!(in_writable_set(&bin.path().join("tool"), &ws));
        std::os::unix::fs::symlink(&ws, bin.path().join("wsdir")).unwrap();
        assert!(in_writable_set(&bin.path().join("wsdir/env"), &ws));
        std::os::unix::fs::symlink("/usr/bin/env", bin.path().join("plain")).unwrap();
        assert!(!in_writable_set(&bin.path().join("plain"), &ws));
        std::os::unix::fs::symlink("loop", bin.path().join("loop")).unwrap();
        assert!(!in_writable_set(&bin.path().join("loop"), &ws));
        // A write-mode MCP server's write_paths join the set.
        let other = tempfile::tempdir().unwrap();
        let tool = other.path().join("tool.sh");
        std::fs::write(&tool, "").unwrap();
        assert!(!in_writable_set(&tool, &ws));
        register_write_paths(&ws, vec![other.path().to_path_buf()]);
        assert!(in_writable_set(&tool, &ws));
        register_write_paths(&ws, vec![]);
        assert!(!in_writable_set(&tool, &ws));
    }
}
