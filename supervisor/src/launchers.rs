//! Launchers that take code from their working directory.
//!
//! Command tools and MCP servers run with the workspace as their working
//! directory, and the workspace is program-writable (see `trusted.rs`).
//! Many build tools and package launchers read a project from there: a
//! `Makefile`, `package.json` scripts and `.npmrc`, `.cargo/config.toml`,
//! `conftest.py`, a `justfile`, a JavaScript config file. Started in a
//! workspace a program can write, such a launcher runs the program's code
//! with the tool's rights (its own jail: the workspace read or written,
//! executables, sometimes the network) instead of the program's (no
//! process at all).
//!
//! [`reads_workspace_code`] recognises them in a configured command line
//! (also behind `env`, `nice`, `timeout` and the like, and in a shell's
//! `-c` text) and says what each would read. A launcher given an explicit
//! project outside the workspace (`make -C /opt/x`, `npm --prefix=/opt/x`,
//! `uv run --project /opt/x`) is not refused; `--version` and `--help`
//! alone are not either. The operator can accept the risk for one tool
//! or server with `trust_workspace_code = true` (for workspaces whose
//! programs cannot write: no `write_file`/`edit_file`, no writable child).
//!
//! The list is of known launchers, not a proof: a program the operator
//! configures that reads its working directory in another way is still
//! the operator's choice (SECURITY.md, "Known gaps").

use std::path::Path;

/// The most shell `-c` texts and wrappers looked through in one command
/// line. Why 8: `sh -c 'env nice make'` is three; more is not a command
/// line anyone configures, and the walk stays bounded whatever the input.
const MAX_DEPTH: usize = 8;

/// Programs that only start the program named after their own options.
const WRAPPERS: &[&str] = &[
    "env", "nice", "nohup", "timeout", "stdbuf", "time", "command", "exec", "ionice", "setsid",
    "chrt", "taskset", "xargs", "sudo", "doas",
];

/// Shells whose `-c` text is a command line of its own.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "fish"];

/// Python modules run with `-m` that import or run code of the working
/// directory's project (the path of `PYTHONSAFEPATH` does not cover them:
/// they put the project on `sys.path` themselves, or build it).
const PYTHON_MODULES: &[&str] = &[
    "pytest", "unittest", "tox", "nox", "mypy", "pylint", "pip", "build", "hatch", "pdm", "poetry",
    "uv", "setup",
];

/// What the command line `name args…` (a command tool's argv, an MCP
/// server's command and args) would read from its working directory,
/// `workspace`, and run: `Some("`make` reads the Makefile …")`, or `None`
/// when no recognised launcher in it does (or each is given a project
/// outside the workspace). `workspace` must be canonical.
pub fn reads_workspace_code<S: AsRef<str>>(
    name: &str,
    args: &[S],
    workspace: &Path,
) -> Option<String> {
    let mut argv: Vec<&str> = Vec::with_capacity(args.len() + 1);
    argv.push(name);
    argv.extend(args.iter().map(AsRef::as_ref));
    line(&argv, workspace, 0)
}

/// The error for a launcher found by [`reads_workspace_code`]: `why` is
/// what it reads, `table` where `trust_workspace_code` would go.
pub fn refusal(why: &str, workspace: &Path, table: &str) -> String {
    format!(
        "configuration error: {why}, and that is the workspace {}, which programs can write: \
         lackpy never runs code from it. Give the launcher a project outside the workspace \
         (e.g. `make -C DIR`, `npm --prefix=DIR`, `uv run --project DIR`), or, if no profile \
         lets a program write the workspace, set trust_workspace_code = true in its {table}",
        workspace.display()
    )
}

/// The file name of a program as configured (`/usr/bin/make` → `make`).
pub(crate) fn base(name: &str) -> &str {
    Path::new(name)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(name)
}

/// One command line (program first), looking through wrappers and shells.
fn line(argv: &[&str], ws: &Path, depth: usize) -> Option<String> {
    if depth > MAX_DEPTH {
        // Fail closed: what cannot be looked through is not accepted.
        return Some(format!(
            "the command line nests wrappers and shells more than {MAX_DEPTH} deep: it cannot be checked"
        ));
    }
    let (&prog, rest) = argv.split_first()?;
    let b = base(prog);
    if b == "env" {
        // `env -S "make test"`: the string is a command line of its own.
        if let Some(text) =
            option_value(rest, "-S").or_else(|| option_value(rest, "--split-string"))
        {
            return shell(text, ws, depth + 1);
        }
    }
    if WRAPPERS.contains(&b) {
        return line(after_wrapper(b, rest), ws, depth + 1);
    }
    if SHELLS.contains(&b) {
        let text = shell_text(rest)?;
        return shell(text, ws, depth + 1);
    }
    if b == "busybox" {
        return line(rest, ws, depth + 1);
    }
    launcher(b, rest, ws)
}

/// The arguments after a wrapper's own: its options, `NAME=VALUE`
/// assignments (`env`), and the one positional some take first
/// (`timeout DURATION`, `taskset MASK`, `chrt PRIORITY`).
fn after_wrapper<'a, 'b>(wrapper: &str, rest: &'a [&'b str]) -> &'a [&'b str] {
    // Options that take the next argument as their value.
    let with_value: &[&str] = match wrapper {
        "env" => &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"],
        "nice" => &["-n", "--adjustment"],
        "timeout" => &["-s", "--signal", "-k", "--kill-after"],
        "ionice" => &["-c", "--class", "-n", "--classdata", "-p", "--pid"],
        "sudo" | "doas" => &["-u", "-g", "-C", "-D", "-r", "-t", "-h", "-p"],
        "xargs" => &["-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s"],
        "exec" => &["-a"],
        _ => &[],
    };
    let takes_positional = matches!(wrapper, "timeout" | "taskset" | "chrt");
    let mut i = 0;
    let mut positional_taken = false;
    while let Some(a) = rest.get(i) {
        if *a == "--" {
            return &rest[i + 1..];
        }
        if a.starts_with('-') && a.len() > 1 {
            i += if with_value.contains(a) { 2 } else { 1 };
            continue;
        }
        if wrapper == "env" && a.contains('=') {
            i += 1;
            continue;
        }
        if takes_positional && !positional_taken {
            positional_taken = true;
            i += 1;
            continue;
        }
        break;
    }
    rest.get(i..).unwrap_or(&[])
}

/// The text a shell runs with `-c` (`-c`, or `-c` among combined short
/// options such as `-ec`, `-lc`): the first argument after the options.
fn shell_text<'a>(rest: &[&'a str]) -> Option<&'a str> {
    let mut seen_c = false;
    for a in rest {
        if a.starts_with('-') && !a.starts_with("--") && a.len() > 1 {
            seen_c |= a[1..].contains('c');
            continue;
        }
        if a.starts_with("--") {
            continue;
        }
        return seen_c.then_some(*a);
    }
    None
}

/// Each simple command of a shell text: split at `;`, `&`, `|`, newlines,
/// parentheses, backquotes and `$(`, then into words (quotes removed; a
/// quoted separator splits too, which can only find more commands).
fn shell(text: &str, ws: &Path, depth: usize) -> Option<String> {
    let cleaned: String = text
        .chars()
        .map(|c| match c {
            ';' | '&' | '|' | '\n' | '(' | ')' | '`' | '{' | '}' => '\n',
            '"' | '\'' | '\\' => ' ',
            c => c,
        })
        .collect();
    for cmd in cleaned.split('\n') {
        let words: Vec<&str> = cmd
            .split_whitespace()
            .map(|w| w.trim_start_matches('$'))
            .filter(|w| !w.is_empty())
            .skip_while(|w| w.contains('=') && !w.starts_with('-'))
            .collect();
        let words: Vec<&str> = match words.first() {
            // `if make; then …`, `! make`: a keyword before the command.
            Some(&("if" | "then" | "else" | "elif" | "do" | "while" | "until" | "!")) => {
                words[1..].to_vec()
            }
            _ => words,
        };
        if words.is_empty() {
            continue;
        }
        if let Some(found) = line(&words, ws, depth) {
            return Some(found);
        }
    }
    None
}

/// The value of option `flag` in `args`: `--flag=V`, `--flag V`, `-fV`
/// (a short flag with its value attached) or `-f V`.
fn option_value<'a>(args: &[&'a str], flag: &str) -> Option<&'a str> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if *a == flag {
            return it.next().copied();
        }
        if let Some(v) = a.strip_prefix(flag) {
            if flag.starts_with("--") {
                if let Some(v) = v.strip_prefix('=') {
                    return Some(v);
                }
            } else if !v.is_empty() && flag.len() == 2 {
                return Some(v);
            }
        }
    }
    None
}

/// Whether one of `flags` gives the launcher a project (a directory or
/// file) outside the program-writable set: an absolute path that is not
/// in the workspace, nor reached through a symlink there.
fn project_outside(args: &[&str], flags: &[&str], ws: &Path) -> bool {
    flags.iter().any(|f| {
        option_value(args, f).is_some_and(|v| {
            let p = Path::new(v);
            p.is_absolute() && !crate::trusted::in_writable_set(p, ws)
        })
    })
}

/// The first argument that is not an option (a subcommand).
fn first_positional<'a>(args: &[&'a str]) -> Option<&'a str> {
    args.iter().copied().find(|a| !a.starts_with('-'))
}

/// Only asking for the version or the help text.
fn only_info(args: &[&str]) -> bool {
    matches!(
        args,
        ["--version" | "-V" | "-v" | "version" | "--help" | "-h" | "help"]
    )
}

/// What launcher `b` (a program's file name) given `args` reads from the
/// workspace, unless it was given a project elsewhere.
fn launcher(b: &str, args: &[&str], ws: &Path) -> Option<String> {
    if only_info(args) {
        return None;
    }
    let say = |what: &str| Some(format!("`{b}` {what}"));
    // Python: `-m MODULE` of a launcher module is that launcher.
    if b.starts_with("python") || b == "pypy3" || b == "pypy" {
        let m = args.iter().position(|a| a.starts_with("-m"))?;
        let (module, rest) = match args[m] {
            "-m" => (*args.get(m + 1)?, args.get(m + 2..).unwrap_or(&[])),
            joined => (&joined[2..], args.get(m + 1..).unwrap_or(&[])),
        };
        let module = module.split('.').next().unwrap_or(module);
        if !PYTHON_MODULES.contains(&module) {
            return None;
        }
        return launcher(module, rest, ws).map(|why| format!("`{b} -m {module}`: {why}"));
    }
    match b {
        "make" | "gmake" | "bmake" => (!project_outside(
            args,
            &["-f", "--file", "--makefile", "-C", "--directory"],
            ws,
        ))
        .then(|| say("reads the Makefile of its working directory and runs its recipes"))?,
        "just" => (!project_outside(args, &["-f", "--justfile", "-d", "--working-directory"], ws))
            .then(|| say("reads the justfile of its working directory and runs its recipes"))?,
        "cargo" => say(
            "reads .cargo/config.toml from its working directory up (`rustc-wrapper`, \
             `runner`: programs it runs) and builds and runs the package's code there",
        ),
        "npm" => {
            // `npm exec`/`npm x` are given npm's own prefix (trusted::cwd_guard).
            if matches!(first_positional(args), Some("exec" | "x")) {
                return None;
            }
            (!project_outside(args, &["--prefix"], ws)).then(|| {
                say("reads the project's .npmrc (`node-options`) and package.json scripts from its working directory")
            })?
        }
        "pnpm" => (!project_outside(args, &["--dir", "-C"], ws)).then(|| {
            say("reads the project's .npmrc, .pnpmfile.cjs and package.json scripts from its working directory")
        })?,
        "yarn" => (!project_outside(args, &["--cwd"], ws)).then(|| {
            say("reads .yarnrc.yml (`yarnPath`: a program it runs) and package.json scripts from its working directory")
        })?,
        "bun" | "bunx" => (!project_outside(args, &["--cwd"], ws)).then(|| {
            say("reads bunfig.toml (`preload`: code it runs) and package.json scripts from its working directory")
        })?,
        "deno" => (!args.contains(&"--no-config") && !project_outside(args, &["--config", "-c"], ws))
            .then(|| say("reads deno.json (import map, tasks) from its working directory"))?,
        "uv" => {
            // `uv tool …`/`uv x` get UV_NO_CONFIG=1 (trusted::cwd_guard).
            if matches!(first_positional(args), Some("tool" | "x")) {
                return None;
            }
            let project = [
                "run", "sync", "build", "lock", "add", "remove", "pip", "tree", "export", "venv",
                "init", "publish", "version",
            ];
            (args.iter().any(|a| project.contains(a)) && !project_outside(args, &["--directory", "--project"], ws))
                .then(|| say("takes the project of its working directory (pyproject.toml, its .venv, uv.toml)"))?
        }
        "poetry" => (!project_outside(args, &["--directory", "-C", "--project", "-P"], ws))
            .then(|| say("takes the project of its working directory (pyproject.toml, its virtualenv)"))?,
        "pdm" | "hatch" | "pipenv" => {
            say("takes the project of its working directory (pyproject.toml or Pipfile, its virtualenv)")
        }
        "pytest" | "py.test" => say(
            "imports conftest.py and the plugins pytest.ini or pyproject.toml name from its working directory",
        ),
        "unittest" => say("imports the test modules it discovers in its working directory"),
        "tox" | "nox" => say("reads tox.ini or noxfile.py from its working directory and runs it"),
        "mypy" | "pylint" => {
            say("imports the plugins its configuration file in the working directory names")
        }
        "setup" => say("runs the working directory's setup.py"),
        "build" => say("builds (runs the build backend of) the project of its working directory"),
        "pip" | "pip3" => {
            // A local directory, a requirements file or a plain name that a
            // program made a directory of (pip builds `./NAME` when it has a
            // setup.py or pyproject.toml): all may come from the workspace.
            let builds = ["install", "wheel", "download", "lock"];
            args.iter()
                .any(|a| builds.contains(a))
                .then(|| say("builds packages, and the working directory's paths and requirements files are the workspace's"))?
        }
        "go" => (!project_outside(args, &["-C"], ws)).then(|| {
            say("takes the module of its working directory (go.mod's `toolchain`, its code, `go generate` lines)")
        })?,
        "gradle" | "gradlew" | "mvn" | "mvnw" | "sbt" | "ant" | "rake" | "bundle" | "dotnet"
        | "mix" | "composer" => say("reads the build file of its working directory and runs what it says"),
        "jest" | "vitest" | "eslint" | "prettier" | "webpack" | "vite" | "rollup" | "babel" => {
            say("loads its JavaScript configuration file (code) from its working directory")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    fn reads(ws: &Path, argv: &[&str]) -> Option<String> {
        let ws = std::fs::canonicalize(ws).unwrap();
        reads_workspace_code(argv[0], &argv[1..], &ws)
    }

    #[test]
    fn build_tools_and_package_launchers_are_recognised() {
        let d = ws();
        for argv in [
            &["make", "test"][..],
            &["/usr/bin/make"],
            &["cargo", "test"],
            &["npm", "run", "lint"],
            &["npm", "test"],
            &["pnpm", "run", "x"],
            &["yarn", "build"],
            &["bunx", "tool"],
            &["uv", "run", "tool.py"],
            &["pytest", "-q"],
            &["python3", "-m", "pytest"],
            &["python3", "-mpytest"],
            &["python3", "-m", "unittest", "discover"],
            &["go", "test", "./..."],
            &["just"],
            &["tox"],
            &["eslint", "src"],
            &["pip", "install", "."],
            &["pip3", "install", "-e", "."],
            &["pip", "install", "-r", "requirements.txt"],
            &["pip", "install", "requests"],
        ] {
            let why = reads(d.path(), argv);
            assert!(why.is_some(), "{argv:?} not recognised");
        }
        let why = reads(d.path(), &["make", "all"]).unwrap();
        assert!(why.contains("Makefile"), "{why}");
    }

    #[test]
    fn wrappers_and_shell_text_are_looked_through() {
        let d = ws();
        for argv in [
            &["env", "FOO=1", "make"][..],
            &["/usr/bin/env", "-u", "HOME", "cargo", "build"],
            &["nice", "-n", "5", "make"],
            &["timeout", "10", "npm", "test"],
            &["sh", "-c", "make test"],
            &["bash", "-ec", "cd . && make"],
            &["sh", "-c", "echo hi; CC=gcc make -j2"],
            &["sh", "-c", "if true; then cargo test; fi"],
            &["sh", "-c", "x=$(make); echo \"$x\""],
            &["busybox", "make"],
            &["sh", "-c", "exec python3 -m pytest"],
            &["env", "-S", "make test"],
            &["uv", "--color", "never", "run", "x"],
        ] {
            assert!(reads(d.path(), argv).is_some(), "{argv:?} not recognised");
        }
    }

    #[test]
    fn other_programs_and_info_requests_pass() {
        let d = ws();
        for argv in [
            &["grep", "-rn", "TODO", "."][..],
            &["python3", "-m", "json.tool"],
            &["python3", "/opt/tool.py"],
            &["make", "--version"],
            &["cargo", "-V"],
            &["npx", "-y", "server"],
            &["npm", "exec", "server"],
            &["uvx", "server"],
            &["uv", "tool", "run", "x"],
            &["pip", "list"],
            &["sh", "-c", "echo make"],
            &["sh", "script-name-only"],
            &["node", "/opt/srv.js"],
        ] {
            // `echo make` splits into one command, `echo`: not a launcher.
            assert_eq!(reads(d.path(), argv), None, "{argv:?}");
        }
    }

    #[test]
    fn a_project_outside_the_workspace_is_accepted_and_one_inside_is_not() {
        let d = ws();
        let outside = tempfile::tempdir().unwrap();
        let out = outside.path().to_str().unwrap();
        let inside = d.path().join("sub");
        std::fs::create_dir(&inside).unwrap();
        let ins = inside.to_str().unwrap();
        let mk = format!("{out}/Makefile");
        let prefix = format!("--prefix={out}");
        assert_eq!(reads(d.path(), &["make", "-C", out, "test"]), None);
        assert_eq!(reads(d.path(), &["make", "-f", &mk]), None);
        assert_eq!(reads(d.path(), &["npm", &prefix, "test"]), None);
        assert_eq!(reads(d.path(), &["uv", "run", "--project", out, "x"]), None);
        assert_eq!(reads(d.path(), &["pnpm", "-C", out, "test"]), None);
        // Inside the workspace, relative, or through a symlink there: refused.
        assert!(reads(d.path(), &["make", "-C", ins]).is_some());
        assert!(reads(d.path(), &["make", "-C", "sub"]).is_some());
        let link = d.path().join("out");
        std::os::unix::fs::symlink(outside.path(), &link).unwrap();
        assert!(reads(d.path(), &["make", "-C", link.to_str().unwrap()]).is_some());
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let d = ws();
        let mut argv: Vec<&str> = vec!["env"; 10_000];
        argv.push("make");
        // Too deep to look through: refused (fail closed), no stack overflow.
        let why = reads(d.path(), &argv).unwrap();
        assert!(why.contains("cannot be checked"), "{why}");
        let within: Vec<&str> = vec!["env", "nice", "make"];
        assert!(reads(d.path(), &within).is_some());
    }
}
