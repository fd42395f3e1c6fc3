//! Escapes through the supervisor's own side, tried against the real
//! binary: trusted code in the program-writable set, writable child jails
//! and `.lackpy/`, control files behind symlinks, doc files swapped while
//! they are read, and traces a program tries to inflate.
//!
//! Every case plants a secret or a marker *outside* the workspace and
//! checks that it was neither read nor written.

use crate::util;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// `lackpy run --json` of `program` in `ws` with `tools` (or the default profile).
fn run(ws: &Path, tools: Option<&str>, program: &str) -> (Output, Value) {
    let ws_s = ws.to_str().unwrap_or(".");
    let mut args = vec!["run", "--json", "--workspace", ws_s];
    if let Some(t) = tools {
        args.extend(["--tools", t]);
    }
    args.push("-");
    let out = util::run_with_stdin(&args, program, None);
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, v)
}

/// A workspace whose config starts the fake MCP server
/// (`tests/fixtures/mcp_server.py`) with `flag`, as server `fake`, with a
/// call timeout of `timeout_seconds`. Needs python3 (asserted).
fn fake_mcp_workspace(flag: &str, timeout_seconds: u32) -> tempfile::TempDir {
    assert!(util::have_python(), "python3 is required for this test");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_server.py");
    let cfg = format!(
        "[mcp_servers.fake]\ncommand = \"python3\"\nargs = [{:?}, {flag:?}]\ntimeout_seconds = {timeout_seconds}\n",
        fixture.display().to_string()
    );
    util::workspace(&[(".lackpy/config.toml", &cfg)])
}

/// `lackpy tools --json` in `ws`: its stderr and its peak RSS in KiB.
fn tools_peak(ws: &Path) -> (String, u64) {
    let ws_s = ws.to_str().unwrap_or(".");
    let (out, peak) = util::run_peak(&["tools", "--json", "--workspace", ws_s], "");
    (stderr(&out), peak)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A directory beside the workspace holding `secret.txt`, and its path.
fn outside() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().expect("tempdir");
    let secret = d.path().join("secret.txt");
    std::fs::write(&secret, "s3cret-outside").expect("secret");
    (d, secret)
}

/// Names of the entries of `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

const SHELL_TOOL: &str = r#"
[[tools]]
name = "shell"
provider = "command"
argv = ["/bin/sh", "-c", "{script}"]
writable = true
effects_ceiling = 3
grade_w = 3
args = [{ name = "script", type = "str" }]
"#;

/// A writable command tool (a shell, the widest a user could configure)
/// cannot change `.lackpy/`: not its files, not the directory itself
/// (rename, replace with a symlink), and it does not even see it.
#[test]
fn writable_command_tool_cannot_touch_the_control_dir() {
    let ws = util::workspace(&[(".lackpy/config.toml", SHELL_TOOL)]);
    let before = std::fs::read_to_string(ws.path().join(".lackpy/config.toml")).expect("cfg");
    let attempts = [
        "echo '[[tools]]' >> .lackpy/config.toml",
        "mkdir -p .lackpy/kits && echo 'read_file' > .lackpy/kits/evil.kit",
        "mv .lackpy moved",
        "rm -rf .lackpy",
        "ln -s / .lackpy/root",
        "cat .lackpy/config.toml",
    ];
    for a in attempts {
        let prog = format!("shell({a:?})");
        let (out, v) = run(ws.path(), Some("shell"), &prog);
        assert_eq!(v["ok"], false, "{a}: {}\n{}", v, stderr(&out));
    }
    // What it sees of .lackpy: an empty directory.
    let (_, v) = run(
        ws.path(),
        Some("shell"),
        r#"shell("ls -A .lackpy; echo end")"#,
    );
    assert_eq!(v["value"], "end\n", "{v}");
    // It can still write the workspace itself.
    let (_, v) = run(ws.path(), Some("shell"), r#"shell("echo hi > ok.txt")"#);
    assert_eq!(v["ok"], true, "{v}");
    assert!(ws.path().join("ok.txt").exists());
    let cfg = ws.path().join(".lackpy");
    assert!(std::fs::symlink_metadata(&cfg).is_ok_and(|m| m.is_dir()));
    assert_eq!(
        std::fs::read_to_string(cfg.join("config.toml")).expect("cfg"),
        before
    );
    assert!(!cfg.join("kits").exists());
    assert!(!ws.path().join("moved").exists());
}

/// A writable command tool cannot change the workspace's `.git` (hooks,
/// `core.fsmonitor` in its config: code the user's git or IDE runs outside
/// any jail), neither its files nor the entry itself (rename, remove,
/// replace); a `.git` file (`gitdir:`, as in a worktree) likewise. It still
/// reads `.git` and writes the rest of the workspace.
#[test]
fn writable_command_tool_cannot_write_git() {
    let ws = util::workspace(&[
        (".lackpy/config.toml", SHELL_TOOL),
        (".git/HEAD", "ref: refs/heads/main\n"),
        (".git/config", "[core]\n"),
        (".git/hooks/README", "hooks\n"),
    ]);
    let attempts = [
        "echo 'exit 0' > .git/hooks/pre-commit",
        "printf '[core]\\n\\tfsmonitor = touch /tmp/x\\n' >> .git/config",
        "mv .git moved",
        "rm -rf .git",
        "rm .git/HEAD",
        "mkdir .git/objects",
        "ln -s / .git/root",
        "umount -l .git; echo x > .git/y",
    ];
    for a in attempts {
        let (out, v) = run(ws.path(), Some("shell"), &format!("shell({a:?})"));
        assert_eq!(v["ok"], false, "{a}: {}\n{}", v, stderr(&out));
    }
    assert_eq!(names(&ws.path().join(".git")), ["HEAD", "config", "hooks"]);
    assert_eq!(names(&ws.path().join(".git/hooks")), ["README"]);
    assert_eq!(
        std::fs::read_to_string(ws.path().join(".git/config")).expect("config"),
        "[core]\n"
    );
    assert!(!ws.path().join("moved").exists());
    // Reading .git and writing the rest of the workspace still work.
    let (_, v) = run(
        ws.path(),
        Some("shell"),
        r#"shell("cat .git/HEAD; echo hi > .gitignore")"#,
    );
    assert_eq!(v["value"], "ref: refs/heads/main\n", "{v}");
    assert!(ws.path().join(".gitignore").exists());
    // A worktree's `.git` file cannot be pointed at another git dir.
    let wt = util::workspace(&[
        (".lackpy/config.toml", SHELL_TOOL),
        (".git", "gitdir: /srv/repo/.git/worktrees/wt\n"),
    ]);
    for a in ["echo 'gitdir: evil' > .git", "rm .git", "mv .git x"] {
        let (out, v) = run(wt.path(), Some("shell"), &format!("shell({a:?})"));
        assert_eq!(v["ok"], false, "{a}: {}\n{}", v, stderr(&out));
    }
    assert_eq!(
        std::fs::read_to_string(wt.path().join(".git")).expect(".git"),
        "gitdir: /srv/repo/.git/worktrees/wt\n"
    );
}

/// Without a `.lackpy/` yet, a writable command tool (configured in the
/// user's config) cannot create one: lackpy creates it first and hides it.
#[test]
fn writable_command_tool_cannot_create_the_control_dir() {
    let user = tempfile::tempdir().expect("tempdir");
    let user_cfg = user.path().join("config.toml");
    std::fs::write(&user_cfg, SHELL_TOOL).expect("user cfg");
    let ws = util::workspace(&[("a.txt", "a")]);
    let evil = "[[tools]]\nname = \"pwn\"\nprovider = \"command\"\nargv = [\"/bin/true\"]\n";
    let prog = format!(
        "shell({:?})",
        format!(
            "mkdir -p .lackpy; printf '{}' > .lackpy/config.toml",
            evil.replace('\n', "\\n")
        )
    );
    let out = util::lackpy()
        .env("LACKPY_CONFIG", &user_cfg)
        .args(["run", "--json", "--tools", "shell", "--workspace"])
        .arg(ws.path())
        .arg("-c")
        .arg(&prog)
        .output()
        .expect("run");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(v["ok"], false, "{v} {}", stderr(&out));
    assert!(!ws.path().join(".lackpy/config.toml").exists());
}

/// A write-mode MCP server can write the workspace but not `.lackpy/`.
#[test]
fn write_mode_mcp_server_cannot_touch_the_control_dir() {
    assert!(
        util::have_python(),
        "python3 is required (the fake MCP server)"
    );
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_server.py");
    let cfg = format!(
        "[mcp_servers.fake]\ncommand = \"python3\"\nargs = [{:?}]\ntimeout_seconds = 5\nworkspace = \"write\"\n",
        fixture.display().to_string()
    );
    let ws = util::workspace(&[(".lackpy/config.toml", &cfg)]);
    let probe = |action: &str, target: &str| -> Value {
        let (out, v) = run(
            ws.path(),
            Some("probe"),
            &format!("probe({action:?}, {target:?})"),
        );
        assert_eq!(v["ok"], true, "{v} {}", stderr(&out));
        v["value"].clone()
    };
    assert_eq!(probe("write", "new.txt")["ok"], true);
    for (action, target) in [
        ("write", ".lackpy/config.toml"),
        ("write", ".lackpy/x.kit"),
        ("rename", ".lackpy"),
        ("symlink", ".lackpy/root"),
        ("read", ".lackpy/config.toml"),
    ] {
        let r = probe(action, target);
        assert_eq!(r["ok"], false, "{action} {target}: {r}");
    }
    assert_eq!(
        std::fs::read_to_string(ws.path().join(".lackpy/config.toml")).expect("cfg"),
        cfg
    );
}

/// An MCP server started by `npx` (the usual way) takes neither
/// configuration nor packages from the workspace, its working directory: a
/// program that wrote `.npmrc` with `node-options = --require=evil.js`
/// there had its code run by every node the launcher started, inside the
/// server's jail (its network, its paths), on the server's next start.
#[test]
fn npx_server_ignores_a_program_written_npmrc() {
    assert!(
        util::have_python(),
        "python3 is required (the fake MCP server)"
    );
    let npx = std::process::Command::new("npx").arg("--version").output();
    assert!(
        npx.is_ok_and(|o| o.status.success()),
        "npx is required (node and npm, which scripts/test-deps needs too)"
    );
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let server = fixtures.join("mcp_server.py");
    let cfg = format!(
        "[mcp_servers.fake]\ncommand = \"npx\"\nargs = [\"--yes\", \"-c\", {:?}]\ntimeout_seconds = 30\nworkspace = \"write\"\nread_paths = [{:?}]\n",
        format!("node -e 0 && exec python3 {}", server.display()),
        fixtures.display().to_string()
    );
    let ws = util::workspace(&[(".lackpy/config.toml", &cfg)]);
    let marker = ws.path().join("pwned");
    let evil = ws.path().join("evil.js");
    let prog = format!(
        "write_file(\"evil.js\", {:?})\nwrite_file(\".npmrc\", {:?})",
        format!(
            "require('fs').writeFileSync({:?}, 'x')",
            marker.display().to_string()
        ),
        format!("node-options=--require={}\n", evil.display())
    );
    let (out, v) = run(ws.path(), Some("write_file"), &prog);
    assert_eq!(v["ok"], true, "{v} {}", stderr(&out));
    // The server starts now, with that .npmrc in its working directory.
    let (out, v) = run(ws.path(), Some("probe"), r#"probe("write", "new.txt")"#);
    assert_eq!(v["ok"], true, "{v} {}", stderr(&out));
    assert!(ws.path().join("new.txt").exists(), "the server runs");
    assert!(!marker.exists(), "evil.js ran in the server's jail");
}

fn python_tool_config(module: &str) -> String {
    format!(
        "[[tools]]\nname = \"f\"\nprovider = \"python\"\nmodule = \"{module}\"\nfunction = \"f\"\ngrade_w = 1\neffects_ceiling = 1\n"
    )
}

/// A program that can write files cannot supply a python tool's code: a
/// module in the workspace is never imported (a configuration error naming
/// it), `.lackpy/tools/` is not writable, and a program-written `csv.py`
/// does not shadow the standard library.
#[test]
fn program_written_python_never_runs() {
    assert!(util::have_python(), "python3 is required (python tools)");
    let (out_dir, _) = outside();
    let marker = out_dir.path().join("pwned");
    let ws = util::workspace(&[(".lackpy/config.toml", &python_tool_config("my_tools"))]);
    let payload = format!(
        "import os\nopen({:?}, 'w').write('x')\ndef f():\n    return 'pwned'\n",
        marker.display().to_string()
    );
    let prog = format!("write_file(\"my_tools.py\", {payload:?})\nf()");
    let (out, v) = run(ws.path(), Some("write_file,f"), &prog);
    assert_eq!(v["ok"], false, "{v} {}", stderr(&out));
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("configuration error") && msg.contains("my_tools.py"),
        "{msg}"
    );
    // Into the control directory: refused by write_file.
    let prog = format!("write_file(\".lackpy/tools/my_tools.py\", {payload:?})");
    let (_, v) = run(ws.path(), Some("write_file"), &prog);
    assert_eq!(v["error"]["type"], "PathOutsideWorkspace", "{v}");
    assert!(!marker.exists(), "program-written python ran");

    // A trusted module importing csv, with a hostile csv.py in the workspace.
    let ws = util::workspace(&[
        (".lackpy/config.toml", &python_tool_config("good")),
        (
            ".lackpy/tools/good.py",
            "def f():\n    import csv\n    return getattr(csv, 'HIJACKED', 'stdlib')\n",
        ),
    ]);
    let evil = format!(
        "HIJACKED = 'yes'\nopen({:?}, 'w').write('x')\n",
        marker.display().to_string()
    );
    let prog = format!("write_file(\"csv.py\", {evil:?})\nf()");
    let (out, v) = run(ws.path(), Some("write_file,f"), &prog);
    assert_eq!(v["value"], "stdlib", "{v} {}", stderr(&out));
    assert!(!marker.exists(), "program-written csv.py ran");
}

/// The python helper is jailed: no supervisor environment through /proc,
/// no files outside the workspace, no network.
#[test]
fn python_tool_runs_jailed() {
    assert!(util::have_python(), "python3 is required (python tools)");
    let (_d, secret) = outside();
    let module = r#"import os
def f(what):
    try:
        if what == 'environ':
            return open('/proc/%d/environ' % os.getppid(), 'rb').read().decode('latin-1')
        if what.startswith('/'):
            return open(what).read()
        import socket
        socket.create_connection(('127.0.0.1', int(what)), timeout=2)
        return 'connected'
    except Exception as e:
        return 'denied ' + type(e).__name__
"#;
    let cfg = "[[tools]]\nname = \"f\"\nprovider = \"python\"\nmodule = \"m\"\nfunction = \"f\"\nargs = [{ name = \"what\", type = \"str\" }]\n";
    let ws = util::workspace(&[(".lackpy/config.toml", cfg), (".lackpy/tools/m.py", module)]);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port().to_string();
    for what in [
        "environ".to_string(),
        secret.display().to_string(),
        "/etc/shadow".to_string(),
        port,
    ] {
        let out = util::lackpy()
            .env("LACKPY_TEST_SECRET", "env-secret-value")
            .args(["run", "--json", "--tools", "f", "--workspace"])
            .arg(ws.path())
            .arg("-c")
            .arg(format!("f({what:?})"))
            .output()
            .expect("run");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let got = v["value"].as_str().unwrap_or_default();
        assert!(got.starts_with("denied"), "{what}: {v} {}", stderr(&out));
        let all = String::from_utf8_lossy(&out.stdout);
        assert!(!all.contains("env-secret-value") && !all.contains("s3cret-outside"));
    }
}

/// `.lackpy` as a symlink (to a directory inside the workspace a program
/// can write, or to one outside) is refused, never followed.
#[test]
fn symlinked_control_dir_is_refused() {
    let (out_dir, _) = outside();
    std::fs::write(
        out_dir.path().join("config.toml"),
        "[profile]\ndefault = \"x\"\n",
    )
    .expect("cfg");
    let ws = util::workspace(&[("lackpy-config/config.toml", "# planted\n"), ("a.txt", "a")]);
    for target in [PathBuf::from("lackpy-config"), out_dir.path().to_path_buf()] {
        let link = ws.path().join(".lackpy");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let (out, v) = run(ws.path(), None, "read_file(\"a.txt\")");
        assert_eq!(out.status.code(), Some(3), "{v} {}", stderr(&out));
        assert!(stderr(&out).contains("symlink"), "{}", stderr(&out));
    }
    // Nothing was written through the link (no traces outside).
    assert_eq!(names(out_dir.path()), ["config.toml", "secret.txt"]);
    assert_eq!(names(&ws.path().join("lackpy-config")), ["config.toml"]);
}

/// A symlinked `traces/` or trace file is refused: the run still answers,
/// with a warning in its JSON and on stderr, and nothing is written outside.
#[test]
fn symlinked_traces_are_refused_and_reported() {
    let (out_dir, secret) = outside();
    // Today's trace file name, as the supervisor names it.
    let day = {
        let scratch = util::workspace(&[]);
        let _ = run(scratch.path(), None, "1");
        names(&scratch.path().join(".lackpy/traces"))
            .pop()
            .expect("a trace file")
    };
    for plant in ["traces", "file"] {
        let ws = util::workspace(&[("a.txt", "a"), (".lackpy/keep", "")]);
        match plant {
            "traces" => {
                std::os::unix::fs::symlink(out_dir.path(), ws.path().join(".lackpy/traces"))
            }
            _ => {
                std::fs::create_dir_all(ws.path().join(".lackpy/traces")).expect("mkdir");
                std::os::unix::fs::symlink(&secret, ws.path().join(".lackpy/traces").join(&day))
            }
        }
        .expect("symlink");
        let (out, v) = run(ws.path(), None, "read_file(\"a.txt\")");
        assert_eq!(v["ok"], true, "{plant}: {v} {}", stderr(&out));
        let warnings = v["warnings"].to_string();
        assert!(warnings.contains("symlink"), "{plant}: {v}");
        assert!(
            stderr(&out).contains("trace not written"),
            "{plant}: {}",
            stderr(&out)
        );
        assert_eq!(
            std::fs::read_to_string(&secret).expect("secret"),
            "s3cret-outside"
        );
        assert_eq!(names(out_dir.path()), ["secret.txt"], "{plant}");
    }
}

/// Huge arguments do not amplify into traces, replies or memory: 40 calls
/// of `write_file` with a 300 kB argument leave a small trace and reply.
#[test]
fn huge_arguments_are_bounded_in_traces_and_replies() {
    let ws = util::workspace(&[("a.txt", "a")]);
    let prog = "p = \"x\" * 300000\nfor i in range(40):\n    write_file(\"a.txt\", p)\nlen(p)";
    let (out, v) = run(ws.path(), Some("write_file"), prog);
    assert_eq!(v["value"], 300_000, "{v} {}", stderr(&out));
    assert!(
        out.stdout.len() < 200_000,
        "reply is {} bytes",
        out.stdout.len()
    );
    assert_eq!(v["trace"].as_array().map(Vec::len), Some(40));
    let content = &v["trace"][0]["args"][1];
    assert_eq!(content["$truncated"]["bytes"], 300_002, "{content}");
    let last = &v["trace"][39]["args"][1];
    assert!(
        last.get("$truncated").is_some() || last.get("$omitted").is_some(),
        "{last}"
    );
    let traces = ws.path().join(".lackpy/traces");
    let size: u64 = std::fs::read_dir(&traces)
        .expect("traces")
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum();
    assert!(size < 200_000, "trace is {size} bytes");
}

/// `resolve_doc` while a helper process keeps swapping the doc file for a
/// symlink to a secret outside (and for a FIFO): the secret never leaks and
/// no call hangs.
#[tokio::test]
async fn resolve_doc_survives_concurrent_swaps() {
    assert!(
        util::have_python(),
        "python3 is required (the swapping helper)"
    );
    let (_d, secret) = outside();
    let cfg = "[[tools]]\nname = \"t\"\nprovider = \"virtual\"\ndocs = \"docs/t.md\"\n";
    let ws = util::workspace(&[(".lackpy/config.toml", cfg), ("docs/t.md", "# real doc\n")]);
    let docs = ws.path().join("docs");
    // The swapper: rename a symlink, a FIFO and a real file over the doc, in a loop.
    let script = format!(
        "import os, time\nd = {d:?}\nend = time.time() + 60\ni = 0\nwhile time.time() < end:\n    i += 1\n    n = os.path.join(d, 'n%d' % i)\n    k = i % 3\n    if k == 0:\n        os.symlink({s:?}, n)\n    elif k == 1:\n        os.mkfifo(n)\n    else:\n        open(n, 'w').write('# real doc\\n')\n    os.rename(n, os.path.join(d, 't.md'))\n",
        d = docs.display().to_string(),
        s = secret.display().to_string()
    );
    let mut swapper = std::process::Command::new("python3")
        .args(["-c", &script])
        .spawn()
        .expect("swapper");
    let c = crate::mcp::connect(ws.path(), &[]).await;
    let started = Instant::now();
    let mut served = 0;
    for _ in 0..400 {
        let r = tokio::time::timeout(
            Duration::from_secs(10),
            crate::mcp::call(&c, "resolve_doc", json!({"path": "docs/t.md"})),
        )
        .await
        .expect("resolve_doc hung");
        let t = crate::mcp::text(&r);
        assert!(!t.contains("s3cret-outside"), "leaked: {t}");
        if t.contains("# real doc") {
            served += 1;
        }
    }
    let _ = swapper.kill();
    let _ = swapper.wait();
    assert!(served > 0, "the real doc was never served");
    assert!(started.elapsed() < Duration::from_secs(120));
    let _ = c.cancel().await;
}

/// [`SHELL_TOOL`] with a secret in the config text, which a program must
/// never get to read.
fn shell_and_secret() -> String {
    format!("{SHELL_TOOL}# token: s3cret-in-config\n")
}

/// A symlink in the workspace to `.lackpy/` (which a writable command tool
/// can make, or a cloned repository can hold) does not let `write_file`
/// create directories in the control directory: `mkdir -p` of the missing
/// parents used to run before the control-directory check, so a directory
/// named like a kit (or a trace file, or `config.toml`) was left behind and
/// broke the configuration of every later run.
#[test]
fn symlink_to_the_control_dir_creates_nothing_there() {
    let ws = util::workspace(&[(".lackpy/config.toml", &shell_and_secret())]);
    let prog = r#"shell("ln -s .lackpy cfg && ln -s . here")
r = []
for p in ["cfg/kits/evil.kit/x", "cfg/traces/d/x.jsonl", "cfg/a/b/c.txt", "here/.lackpy/kits/k.kit/x"]:
    r.append(write_file(p, "x"))
r"#;
    let (out, v) = run(ws.path(), Some("shell,write_file"), prog);
    assert_eq!(v["ok"], false, "{v} {}", stderr(&out));
    assert_eq!(v["error"]["type"], "PathOutsideWorkspace", "{v}");
    for p in [
        "kits/evil.kit/x",
        "traces/d/x.jsonl",
        "a/b/c.txt",
        "kits/k.kit/x",
    ] {
        let prog = format!("write_file({:?}, \"x\")", format!("cfg/{p}"));
        let (_, v) = run(ws.path(), Some("write_file"), &prog);
        assert_eq!(v["error"]["type"], "PathOutsideWorkspace", "{p}: {v}");
    }
    let ctl = ws.path().join(".lackpy");
    assert!(
        !ctl.join("kits").exists(),
        "a directory was created in .lackpy/kits"
    );
    assert!(
        !ctl.join("a").exists(),
        "a directory was created in .lackpy"
    );
    assert!(!ctl.join("traces/d").exists());
    // The configuration still loads and the tools still work.
    let (out, v) = run(ws.path(), Some("shell"), r#"shell("echo ok")"#);
    assert_eq!(v["value"], "ok\n", "{v} {}", stderr(&out));
}

/// A repository's `.git` is code git runs outside any jail (hooks on
/// commit or checkout, `core.fsmonitor` on every `git status` an IDE makes,
/// a `.git` file pointing at another git dir): `write_file` and `edit_file`
/// never change it, by name, through `..` or through a symlink, at the
/// workspace root or in a nested repository.
#[test]
fn git_dirs_are_never_written_by_programs() {
    let ws = util::workspace(&[
        (".git/config", "[core]\n\tbare = false\n"),
        (".git/hooks/README", "hooks\n"),
        ("vendor/lib/.git/HEAD", "ref: refs/heads/main\n"),
        ("src/a.py", "x = 1\n"),
    ]);
    std::os::unix::fs::symlink(".git/hooks", ws.path().join("h")).expect("symlink");
    std::os::unix::fs::symlink("vendor/lib/.git", ws.path().join("v")).expect("symlink");
    for (tool, call) in [
        (
            "write_file",
            r##"write_file(".git/hooks/pre-commit", "#!/bin/sh\ntouch /tmp/pwned\n")"##,
        ),
        (
            "write_file",
            r#"write_file(".git/config", "[core]\n\tfsmonitor = touch /tmp/pwned\n")"#,
        ),
        (
            "write_file",
            r#"write_file("src/../.git/hooks/post-checkout", "x")"#,
        ),
        ("write_file", r#"write_file("h/pre-push", "x")"#),
        ("write_file", r#"write_file("v/config", "x")"#),
        (
            "write_file",
            r#"write_file("vendor/lib/.git/hooks/pre-commit", "x")"#,
        ),
        (
            "write_file",
            r#"write_file("src/.git", "gitdir: ../vendor/lib/.git")"#,
        ),
        (
            "edit_file",
            r#"edit_file(".git/config", "bare = false", "fsmonitor = x")"#,
        ),
    ] {
        let (out, v) = run(ws.path(), Some(tool), call);
        assert_eq!(v["ok"], false, "{call}: {v} {}", stderr(&out));
        assert_eq!(v["error"]["type"], "PathOutsideWorkspace", "{call}: {v}");
        let msg = v["error"]["message"].as_str().unwrap_or("");
        assert!(msg.contains(".git"), "{call}: {msg}");
    }
    let hooks = names(&ws.path().join(".git/hooks"));
    assert_eq!(hooks, ["README"], "a hook was written");
    let config = std::fs::read_to_string(ws.path().join(".git/config")).expect("config");
    assert!(!config.contains("fsmonitor"), "{config}");
    assert!(!ws.path().join("vendor/lib/.git/config").exists());
    assert!(!ws.path().join("src/.git").exists());
    // The project's own files, `.gitignore` included, are written as before.
    let (_, v) = run(
        ws.path(),
        Some("write_file"),
        r#"[write_file(".gitignore", "target/\n"), write_file("src/b.py", "y = 2\n")]"#,
    );
    assert_eq!(v["value"], serde_json::json!([true, true]), "{v}");
}

/// The control directory is not readable through the builtin tools either
/// (child jails never see it): its config may hold secrets meant for the
/// tools (`env`, `headers`), its traces hold every client's programs and
/// arguments. By name, through `..`, through symlinks inside the
/// workspace, and in `find_files` listings.
#[test]
fn control_dir_is_not_readable_by_programs() {
    let ws = util::workspace(&[
        (".lackpy/config.toml", &shell_and_secret()),
        ("sub/a.txt", "a"),
    ]);
    std::os::unix::fs::symlink(".lackpy", ws.path().join("cfg")).expect("symlink");
    std::os::unix::fs::symlink(".lackpy/config.toml", ws.path().join("cfgfile")).expect("symlink");
    // A first run leaves a trace, with its program, behind.
    let (_, v) = run(
        ws.path(),
        Some("read_file"),
        "x = 'trace-marker-42'\nread_file('sub/a.txt')",
    );
    assert_eq!(v["ok"], true, "{v}");
    let traces: Vec<String> = names(&ws.path().join(".lackpy/traces"));
    assert!(!traces.is_empty());
    let mut reads = vec![
        ".lackpy/config.toml".to_string(),
        "./.lackpy/config.toml".into(),
        "sub/../.lackpy/config.toml".into(),
        "cfg/config.toml".into(),
        "cfgfile".into(),
    ];
    for t in &traces {
        reads.push(format!(".lackpy/traces/{t}"));
        reads.push(format!("cfg/traces/{t}"));
    }
    for p in &reads {
        for prog in [
            format!("read_file({p:?})"),
            format!("edit_file({p:?}, '', '')"),
        ] {
            let (out, v) = run(ws.path(), Some("read_file,edit_file"), &prog);
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(v["error"]["type"], "PathOutsideWorkspace", "{prog}: {v}");
            assert!(!text.contains("s3cret-in-config"), "{prog}: {text}");
            assert!(!text.contains("trace-marker-42"), "{prog}: {text}");
        }
    }
    for pat in [
        "**",
        "**/*",
        ".lackpy/*",
        "cfg/*",
        "*/config.toml",
        "cfg/**",
        ".lackpy",
    ] {
        let prog = format!("find_files({pat:?})");
        let (out, v) = run(ws.path(), Some("find_files"), &prog);
        assert_eq!(v["ok"], true, "{prog}: {v} {}", stderr(&out));
        let found = v["value"].to_string();
        assert!(
            !found.contains(".lackpy")
                && !found.contains("config.toml")
                && !found.contains("traces"),
            "{prog}: {found}"
        );
    }
    // The rest of the workspace is as readable as before.
    let (_, v) = run(
        ws.path(),
        Some("read_file,find_files"),
        "[read_file('sub/a.txt'), find_files('**/*.txt')]",
    );
    assert_eq!(v["value"], json!(["a", ["sub/a.txt"]]), "{v}");
}

/// A command tool whose literal argument is a script in the workspace
/// (`["/bin/sh", "run.sh"]`, cwd = the workspace) would run code a program
/// wrote: refused like an MCP server's script argument, naming the file.
#[test]
fn command_tool_script_in_the_workspace_never_runs() {
    for argv in [
        r#"["/bin/sh", "run.sh"]"#,
        r#"["/bin/sh", "./sub/../run.sh"]"#,
        r#"["/usr/bin/env", "--script=tool.py"]"#,
    ] {
        let cfg = format!("[[tools]]\nname = \"t\"\nprovider = \"command\"\nargv = {argv}\n");
        let ws = util::workspace(&[
            (".lackpy/config.toml", &cfg),
            ("run.sh", "echo pwned-by-script"),
            ("tool.py", "print('pwned-by-script')"),
            ("sub/x", ""),
        ]);
        let (out, v) = run(ws.path(), Some("t"), "t()");
        assert_eq!(v["ok"], false, "{argv}: {v} {}", stderr(&out));
        let msg = v["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains("configuration error"), "{argv}: {msg}");
        assert!(!v.to_string().contains("pwned-by-script"), "{argv}: {v}");
    }
    // Data files and directories named literally stay allowed.
    let cfg =
        "[[tools]]\nname = \"t\"\nprovider = \"command\"\nargv = [\"/bin/cat\", \"data.txt\"]\n";
    let ws = util::workspace(&[(".lackpy/config.toml", cfg), ("data.txt", "plain data")]);
    let (out, v) = run(ws.path(), Some("t"), "t()");
    assert_eq!(v["value"], "plain data", "{v} {}", stderr(&out));
}

/// A command tool that is a launcher reading its working directory (the
/// workspace) ran what a program wrote there: `make` its `Makefile`, also
/// behind `sh -c` or `env`. Refused, naming the launcher and the way out;
/// a project outside the workspace (`make -C DIR`) and the operator's
/// explicit `trust_workspace_code = true` are accepted.
#[test]
fn command_tool_launcher_never_runs_workspace_code() {
    let make = Path::new("/usr/bin/make");
    if !make.exists() {
        util::skip(
            "command_tool_launcher_never_runs_workspace_code",
            "needs /usr/bin/make",
        );
        return;
    }
    let evil = "write_file(\"Makefile\", \"all:\\n\\t@echo pwned-by-makefile\\n\")\n";
    for (argv, extra) in [
        (r#"["/usr/bin/make"]"#, ""),
        (r#"["/usr/bin/make", "all"]"#, ""),
        (r#"["/bin/sh", "-c", "cd . && make all"]"#, ""),
        (r#"["/usr/bin/env", "MAKEFLAGS=", "make"]"#, ""),
        (r#"["/usr/bin/make", "-C", "sub"]"#, ""),
        (
            r#"["/usr/bin/make", "{target}"]"#,
            "args = [{ name = \"target\", type = \"str\" }]\n",
        ),
    ] {
        let cfg =
            format!("[[tools]]\nname = \"t\"\nprovider = \"command\"\nargv = {argv}\n{extra}");
        let ws = util::workspace(&[(".lackpy/config.toml", &cfg), ("sub/x", "")]);
        let call = if extra.is_empty() {
            "t()"
        } else {
            "t(\"all\")"
        };
        let (out, v) = run(ws.path(), Some("write_file,t"), &format!("{evil}{call}"));
        assert_eq!(v["ok"], false, "{argv}: {v} {}", stderr(&out));
        let msg = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            msg.contains("configuration error")
                && msg.contains("Makefile")
                && msg.contains("trust_workspace_code"),
            "{argv}: {msg}"
        );
        assert!(!msg.contains("pwned-by-makefile"), "{argv}: {v}");
        assert_eq!(v["value"], Value::Null, "{argv}: {v}");
    }
    // A Makefile outside the workspace is the operator's: not refused (the
    // command's jail may still keep make from reading it: only its
    // installation and the workspace are open to it).
    let project = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        project.path().join("Makefile"),
        "all:\n\t@echo from-outside\n",
    )
    .expect("mk");
    let cfg = format!(
        "[[tools]]\nname = \"t\"\nprovider = \"command\"\nargv = [\"/usr/bin/make\", \"-s\", \"-C\", {:?}]\n",
        project.path().to_str().expect("utf-8 path")
    );
    let ws = util::workspace(&[(".lackpy/config.toml", &cfg)]);
    let (out, v) = run(ws.path(), Some("write_file,t"), &format!("{evil}t()"));
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        !msg.contains("trust_workspace_code"),
        "{v} {}",
        stderr(&out)
    );
    assert!(!msg.contains("pwned-by-makefile"), "{v}");
    // The operator's explicit opt-in: the workspace's Makefile runs.
    let cfg = "[[tools]]\nname = \"t\"\nprovider = \"command\"\nargv = [\"/usr/bin/make\", \"-s\"]\ntrust_workspace_code = true\n";
    let ws = util::workspace(&[(".lackpy/config.toml", cfg)]);
    let (out, v) = run(ws.path(), Some("write_file,t"), &format!("{evil}t()"));
    assert_eq!(v["value"], "pwned-by-makefile\n", "{v} {}", stderr(&out));
}

/// `python3 -m module` (or `-c`) runs with the workspace as its working
/// directory, which Python puts first on `sys.path`: a program that wrote
/// `json.py` there had its code run by a command tool `python3 -m
/// json.tool` (and likewise by an MCP server started as `python -m
/// server`). Children that may run Python that way get `PYTHONSAFEPATH`.
#[test]
fn python_dash_m_never_imports_from_the_workspace() {
    let python = Path::new("/usr/bin/python3");
    if !python.exists() {
        util::skip(
            "python_dash_m_never_imports_from_the_workspace",
            "needs /usr/bin/python3 (3.11 or later)",
        );
        return;
    }
    let cfg = "[[tools]]\nname = \"fmt\"\nprovider = \"command\"\nargv = [\"/usr/bin/python3\", \"-m\", \"json.tool\", \"--compact\"]\nstdin = \"{doc}\"\nargs = [{ name = \"doc\", type = \"str\" }]\n";
    let ws = util::workspace(&[(".lackpy/config.toml", cfg)]);
    let prog = "write_file(\"json.py\", \"print('HIJACKED')\\nimport sys\\nsys.exit(0)\\n\")\nfmt('{\"a\": 1}')";
    let (out, v) = run(ws.path(), Some("write_file,fmt"), prog);
    assert_eq!(v["value"], "{\"a\":1}\n", "{v} {}", stderr(&out));
}

/// A user config inside the workspace (the workspace is the home
/// directory, or `LACKPY_CONFIG` names a file in it) is program-writable:
/// a program used to write `.config/lackpy/config.toml` with `write_file`
/// and have the next run grant it a shell. It is now a configuration
/// error; an absent one there is simply not read.
#[test]
fn user_config_in_the_workspace_is_never_trusted() {
    let home = util::workspace(&[("a.txt", "a")]);
    let xdg = home.path().join(".config");
    let run_in_home = |prog: &str, env: (&str, &Path)| {
        let out = util::lackpy()
            .env(env.0, env.1)
            .args(["run", "--json", "--workspace"])
            .arg(home.path())
            .args(["--tools", "write_file", "-c", prog])
            .output()
            .expect("run");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out, v)
    };
    let evil = "[profile]\ndefault = \"pwn\"\n\n[profiles.pwn]\ntools = [\"shell\"]\n\n[[tools]]\nname = \"shell\"\nprovider = \"command\"\nargv = [\"/bin/sh\", \"-c\", \"{script}\"]\nargs = [{ name = \"script\", type = \"str\" }]\n";
    // No user config yet: runs work, and the program writes one.
    let prog = format!("write_file(\".config/lackpy/config.toml\", {evil:?})");
    let (out, v) = run_in_home(&prog, ("XDG_CONFIG_HOME", &xdg));
    assert_eq!(v["ok"], true, "{v} {}", stderr(&out));
    // The next run refuses to trust it.
    let out = util::lackpy()
        .env("XDG_CONFIG_HOME", &xdg)
        .args(["run", "--json", "--workspace"])
        .arg(home.path())
        .args(["-c", "shell(\"echo pwned\")"])
        .output()
        .expect("run");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(out.status.code(), Some(3), "{v} {}", stderr(&out));
    assert_eq!(v["error"]["kind"], "config", "{v}");
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("user config") && msg.contains("programs can write"),
        "{msg}"
    );
    assert!(!out.stdout.windows(6).any(|w| w == b"pwned\\"), "{v}");
    // LACKPY_CONFIG naming a file in the workspace: the same.
    let cfg = home.path().join(".config/lackpy/config.toml");
    let (out, v) = run_in_home("1", ("LACKPY_CONFIG", &cfg));
    assert_eq!(out.status.code(), Some(3), "{v} {}", stderr(&out));
    // Outside the workspace it is the trusted user config it always was.
    let outside = tempfile::tempdir().expect("tempdir");
    let ok = outside.path().join("config.toml");
    std::fs::write(&ok, "[sandbox]\ntimeout_seconds = 5\n").expect("cfg");
    let (out, v) = run_in_home("1", ("LACKPY_CONFIG", &ok));
    assert_eq!(v["value"], 1, "{v} {}", stderr(&out));
}

/// Code intelligence over many hostile files, each just under the per-file
/// index cap (`f();` a quarter of a million times, every file different so
/// the cache shares nothing): one `find_callers` call used to hold every
/// file's index at once — 64 such files took the supervisor to 1.6 GiB.
/// The indexes one call holds are now bounded together
/// (`MAX_TOTAL_INDEX_BYTES`), and the call ends with `TooLarge`.
#[test]
fn code_intelligence_bounds_the_total_index() {
    let ws = util::workspace(&[]);
    let body = "f();".repeat(254_000);
    for i in 0..10 {
        std::fs::write(
            ws.path().join(format!("m{i}.py")),
            format!("# {i}\n{body}\n"),
        )
        .expect("write");
    }
    let ws_s = ws.path().to_str().unwrap_or(".");
    let args = [
        "run",
        "--json",
        "--workspace",
        ws_s,
        "--tools",
        "find_callers",
        "--timeout",
        "120",
        "-",
    ];
    let out = util::run_with_stdin(&args, "find_callers(\"zz\")", None);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(v["error"]["type"], "TooLarge", "{v} {}", stderr(&out));
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(msg.contains("MAX_TOTAL_INDEX_BYTES"), "{msg}");
}

/// Values of many small items cross the worker boundary as a clear error,
/// never as a "protocol violation": a frame well under the 16 MiB cap can
/// still be refused by its reader, whose bincode limit counts every
/// element at its size in memory (32 bytes for a one-byte `0`). A valid
/// program whose value was `[0] * 600000` ended as an internal error
/// (`ProtocolViolation: worker killed`, exit 4); the same list as a tool
/// argument did too, with the call untraced; and a command tool printing
/// 700,000 lines (`parse = "lines"`, 1.4 MB) was traced as a success while
/// the program got "no answer from the supervisor: undecodable frame".
#[test]
fn many_small_values_are_a_clear_error_not_a_protocol_violation() {
    let cfg = r#"
[[tools]]
name = "lines"
provider = "command"
argv = ["/bin/cat", "--", "{path}"]
parse = "lines"
args = [{ name = "path", type = "str" }]
"#;
    let ws = util::workspace(&[(".lackpy/config.toml", cfg)]);
    std::fs::write(ws.path().join("n.txt"), "x\n".repeat(700_000)).expect("write");

    let (out, v) = run(ws.path(), Some("lines"), "[0] * 600000");
    assert_eq!(out.status.code(), Some(1), "{v} {}", stderr(&out));
    assert_eq!(v["error"]["kind"], "limit", "{v}");
    assert_eq!(v["error"]["type"], "result", "{v}");

    let (out, v) = run(ws.path(), Some("lines"), "x = [0] * 600000\nlines(x)");
    assert_eq!(out.status.code(), Some(1), "{v} {}", stderr(&out));
    assert_eq!(v["error"]["kind"], "tool", "{v}");
    assert_eq!(v["error"]["type"], "TooLarge", "{v}");

    let (out, v) = run(ws.path(), Some("lines"), "r = lines(\"n.txt\")\nlen(r)");
    assert_eq!(out.status.code(), Some(1), "{v} {}", stderr(&out));
    assert_eq!(v["error"]["type"], "TooLarge", "{v}");
    assert_eq!(v["trace"][0]["ok"], false, "{v}");

    // Just under the bound, the same shapes still work.
    let (out, v) = run(ws.path(), Some("lines"), "[0] * 400000");
    let n = v["value"].as_array().map(Vec::len);
    assert_eq!(n, Some(400_000), "{} {}", v["error"], stderr(&out));
}

/// CPU seconds (user + system, all threads) the process `pid` has used so
/// far, from `/proc/PID/stat` (in USER_HZ ticks, 100 a second on Linux).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// A `find_definitions` file selector is matched against every indexed
/// file's path; a hostile one (a `*` then a 240-character literal, against
/// 250-character directory names fourteen deep) costs most of a
/// millisecond per file. That matching never looked at the clock: the run
/// ended at its deadline, but in `lackpy mcp` (or `serve`) the indexer
/// thread went on burning a core for as long as the matching took (over
/// 15 s here; unbounded in the number of runs). It now stops with the run.
#[test]
fn code_intelligence_stops_searching_at_the_deadline() {
    let ws = util::workspace(&[]);
    let mut deep = ws.path().to_path_buf();
    for _ in 0..14 {
        deep.push("a".repeat(250));
    }
    std::fs::create_dir_all(&deep).expect("mkdir");
    for i in 0..30_000 {
        std::fs::write(deep.join(format!("f{i:05}.py")), "").expect("write");
    }
    let mut mcp = util::McpLines::start(ws.path());
    let pid = mcp.pid();
    let mut send = |v: Value| mcp.send(&v);
    let selector = format!("**/*{}b/x.py", "a".repeat(240));
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "run_program",
        "arguments": {"program": format!("find_definitions({selector:?})"),
                      "tools": ["find_definitions"]}}}),
    );
    let answer = mcp.recv(Duration::from_secs(60)).unwrap_or_default();
    let before = cpu_seconds(pid);
    std::thread::sleep(Duration::from_secs(3));
    let busy = cpu_seconds(pid) - before;
    drop(mcp);
    assert!(answer.contains("\"id\":2"), "{answer}");
    assert!(
        busy < 1.0,
        "the server used {busy:.2} s of CPU in the 3 s after the run ended"
    );
}

/// `find_files` hides the root's `.lackpy` however the root is reached:
/// through a symlink to it (`self -> .`, which a writable tool or a cloned
/// repository can hold), `*/*` listed `self/.lackpy` (and `*/*/*`
/// `self/self/.lackpy`), naming the control directory it promises never to
/// list.
#[test]
fn find_files_never_lists_the_control_dir_through_a_link_to_the_root() {
    let ws = util::workspace(&[(".lackpy/config.toml", "# x\n"), ("sub/a.txt", "a")]);
    std::os::unix::fs::symlink(".", ws.path().join("self")).expect("symlink");
    let prog = "[find_files('*/*'), find_files('*/*/*'), find_files('self/*')]";
    let (out, v) = run(ws.path(), Some("find_files"), prog);
    assert_eq!(v["ok"], true, "{v} {}", stderr(&out));
    assert!(!v["value"].to_string().contains(".lackpy"), "{v}");
    assert!(v["value"][0].to_string().contains("self/sub"), "{v}");
}

/// A tool result over the 16 MiB frame (here `find_files` of 72,000
/// 246-character names, 17.9 MB) ends the run with the `result` limit, and
/// the call is traced as failed: it was traced as a success though the
/// program never got its result.
#[test]
fn a_result_over_the_frame_is_traced_as_failed() {
    let ws = util::workspace(&[]);
    let pad = "n".repeat(240);
    for i in 0..72_000 {
        std::fs::write(ws.path().join(format!("{i:06}{pad}")), "").expect("write");
    }
    let (out, v) = run(ws.path(), Some("find_files"), "len(find_files('*'))");
    assert_eq!(out.status.code(), Some(1), "{v} {}", stderr(&out));
    assert_eq!(v["error"]["kind"], "limit", "{v}");
    assert_eq!(v["error"]["type"], "result", "{v}");
    assert_eq!(v["trace"][0]["ok"], false, "{v}");
}

/// A program cannot make a directory a bare git repository: with `HEAD`,
/// `objects/` and `refs/`, git takes `sub/` for a repository (found before
/// the workspace's own `.git`) and obeys `sub/config` outside any jail —
/// `core.fsmonitor` ran a program-chosen command on the next `git status`
/// in `sub/` (by the user, an IDE or a git-aware shell prompt), with no
/// `.git` anywhere in the paths written. A file named `HEAD` that git
/// would accept as one is refused; any other `HEAD` is written.
#[test]
fn programs_cannot_make_a_bare_repository() {
    let ws = util::workspace(&[]);
    let prog = r#"write_file("sub/config", "[core]\n\tbare = false\n\tworktree = .\n\tfsmonitor = touch pwned; false\n")
write_file("sub/objects/info/keep", "")
write_file("sub/refs/heads/keep", "")
write_file("notes/HEAD", "plain text")
write_file("sub/HEAD", "ref: refs/heads/main\n")"#;
    let (out, v) = run(ws.path(), Some("write_file,edit_file"), prog);
    assert_eq!(
        v["error"]["type"],
        "PathOutsideWorkspace",
        "{v} {}",
        stderr(&out)
    );
    assert_eq!(v["error"]["line"], 5, "{v}");
    assert!(!ws.path().join("sub/HEAD").exists());
    let prog = r#"write_file("sub/HEAD", "x")
edit_file("sub/HEAD", "x", "0123456789abcdef0123456789abcdef01234567")"#;
    let (out, v) = run(ws.path(), Some("write_file,edit_file"), prog);
    assert_eq!(
        v["error"]["type"],
        "PathOutsideWorkspace",
        "{v} {}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("sub/HEAD")).unwrap_or_default(),
        "x"
    );
}

/// One real record of a run in `ws`, made large (1,000 calls of 1 KiB
/// arguments, as a client's own runs can be) and written 120 times to an
/// older day's file (run ids `20260101000000-…` to `…000119-…`); today's
/// file goes, so every read must go through the large one.
fn write_large_traces(ws: &std::path::Path) {
    use std::io::Write;
    let (_, v) = run(ws, Some("read_file"), "read_file('a.txt')");
    assert_eq!(v["ok"], true, "{v}");
    let dir = ws.join(".lackpy/traces");
    let today: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("traces")
        .filter_map(|e| Some(e.ok()?.path()))
        .collect();
    let first = std::fs::read_to_string(&today[0]).expect("trace");
    let mut rec: Value = serde_json::from_str(first.lines().next().unwrap_or("")).expect("record");
    for p in &today {
        std::fs::remove_file(p).expect("remove");
    }
    let mut call = rec["calls"][0].clone();
    call["args"] = json!(["a".repeat(1000)]);
    rec["calls"] = json!(vec![call; 1000]);
    let mut file = std::fs::File::create(dir.join("2026-01-01.jsonl")).expect("create");
    for i in 0..120 {
        rec["run_id"] = json!(format!("20260101{i:06}-000000000000"));
        rec["time"] = json!(format!("2026-01-01T00:{:02}:{:02}.000000Z", i / 60, i % 60));
        writeln!(file, "{rec}").expect("write");
    }
}

/// `traces` over large traces holds only what it returns: it read every
/// record of every trace file (up to `total_mb`, which a client fills with
/// its own runs) for each call, so six concurrent `traces(limit=1)` over
/// 330 MB of traces took `lackpy mcp` to 2.5 GiB. Now files are read
/// newest first, only kept records are held, and a reply is at most
/// 8 MiB of records.
#[test]
fn traces_of_large_trace_files_stay_bounded() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let ws = util::workspace(&[("a.txt", "a")]);
    // One real record, made large (1,000 calls of 1 KiB arguments, as a
    // client's own runs can be) and written 120 times to an older day's
    // file; today's file goes, so every call must read the large one.
    write_large_traces(ws.path());
    let mut cmd = util::lackpy();
    cmd.arg("mcp").arg("--workspace").arg(ws.path());
    let io = [Stdio::piped(), Stdio::piped(), Stdio::null()];
    let mut child = util::spawn(&mut cmd, io, "lackpy mcp");
    let pid = child.id();
    let mut stdin = child.stdin.take().expect("stdin");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut send = |v: Value| {
        writeln!(stdin, "{v}").expect("write");
        stdin.flush().expect("flush");
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}}),
    );
    let mut line = String::new();
    out.read_line(&mut line).expect("initialize reply");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for id in 10..14 {
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "traces", "arguments": {"limit": 1}}}));
    }
    let mut replies = Vec::new();
    for _ in 10..14 {
        line.clear();
        out.read_line(&mut line).expect("traces reply");
        replies.push(line.clone());
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    let hwm_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(u64::MAX);
    assert!(
        replies
            .iter()
            .all(|r| r.contains("20260101000119-000000000000")),
        "{replies:?}"
    );
    assert!(hwm_kb < 150_000, "the server peaked at {hwm_kb} kB");
}

/// `lackpy run --json` of `program` with `tools`, and the supervisor's
/// peak RSS in KiB (`util::run_peak`).
fn run_peak(ws: &Path, tools: &str, program: &str) -> (Output, Value, u64) {
    let ws_s = ws.to_str().unwrap_or(".");
    let args = ["run", "--json", "--workspace", ws_s, "--tools", tools, "-"];
    let (out, peak) = util::run_peak(&args, program);
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, v, peak)
}

/// A tool result that arrives as JSON is decoded against the values one
/// reply can carry before anything is built: 8 MiB of `[],[],…` printed by
/// a `parse = "json"` command tool was parsed whole into
/// `serde_json::Value`s first and took the supervisor to ~310 MiB, only
/// for the reply to refuse it; likewise `jsonl`. The call now ends with
/// `TooLarge` naming `MAX_VALUES`, and normal JSON still works.
#[test]
fn json_tool_output_is_bounded_before_it_is_parsed() {
    let cfg = r#"
[[tools]]
name = "json"
provider = "command"
argv = ["/bin/cat", "--", "{path}"]
parse = "json"
args = [{ name = "path", type = "str" }]

[[tools]]
name = "jsonl"
provider = "command"
argv = ["/bin/cat", "--", "{path}"]
parse = "jsonl"
args = [{ name = "path", type = "str" }]
"#;
    let ws = util::workspace(&[(".lackpy/config.toml", cfg)]);
    let n = (8 << 20) / 3 - 2;
    let flood = format!("[{}[]]", "[],".repeat(n));
    std::fs::write(ws.path().join("flood.json"), flood).expect("write");
    // 8 MiB of lines of `[0,0,…]`, fewer lines than the lines cap.
    let line = format!("[{}0]\n", "0,".repeat(4095));
    std::fs::write(ws.path().join("flood.jsonl"), line.repeat(1000)).expect("write");
    std::fs::write(
        ws.path().join("ok.json"),
        r#"{"a": [1, 2.5, null], "b": "x"}"#,
    )
    .expect("write");
    for (tool, file) in [("json", "flood.json"), ("jsonl", "flood.jsonl")] {
        let (out, v, peak) = run_peak(ws.path(), "json,jsonl", &format!("len({tool}({file:?}))"));
        assert_eq!(v["error"]["type"], "TooLarge", "{v} {}", stderr(&out));
        let msg = v["error"]["message"].as_str().unwrap_or("");
        assert!(msg.contains("MAX_VALUES"), "{msg}");
        assert!(
            peak < 120_000,
            "{tool}: the supervisor peaked at {peak} KiB"
        );
    }
    let (out, v) = run(ws.path(), Some("json"), "json('ok.json')");
    assert_eq!(
        v["value"],
        json!({"a": [1, 2.5, null], "b": "x"}),
        "{v} {}",
        stderr(&out)
    );
}

/// An MCP server's response line is counted before rmcp parses it: 8 MB
/// of `0,0,…` in `structuredContent` was parsed into `serde_json::Value`s
/// (80 bytes each) and took the supervisor to 560 MiB, only for the
/// reply to the worker to refuse it. Now the line never reaches rmcp: the
/// call fails at once with an error naming `MAX_LINE_VALUES`, and the
/// server goes on answering.
#[test]
fn mcp_results_are_counted_before_they_are_parsed() {
    let ws = fake_mcp_workspace("--flood", 20);
    let (out, v, peak) = run_peak(
        ws.path(),
        "flood,add",
        "[len(flood(10)['v']), add(1, 2)['sum']]",
    );
    assert_eq!(v["value"], json!([11, 3]), "{v} {}", stderr(&out));
    assert!(
        peak < 120_000,
        "the supervisor peaked at {peak} KiB on a small result"
    );
    let (out, v, peak) = run_peak(ws.path(), "flood", "len(flood(4000000)['v'])");
    assert_eq!(v["error"]["type"], "TooLarge", "{v} {}", stderr(&out));
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(msg.contains("MAX_LINE_VALUES"), "{msg}");
    assert!(peak < 150_000, "the supervisor peaked at {peak} KiB");
}

/// `lackpy trace` reads traces newest first and holds a bounded amount:
/// it held every record of the workspace (up to `total_mb`, 512 MiB by
/// default) for one `trace list --limit 1`: the 130 MB of large records
/// below took it to 190 MiB (330 MB: 440 MiB). Now a list holds at most
/// 16 MiB of records and says on stderr when older runs were left out;
/// `show` finds the oldest run still.
#[test]
fn trace_cli_reads_large_traces_bounded() {
    let ws = util::workspace(&[("a.txt", "a")]);
    write_large_traces(ws.path());
    let ws_s = ws.path().to_str().unwrap_or(".");
    // `lackpy trace ARGS --json` on the workspace: its JSON, its stderr
    // and its peak RSS (KiB).
    let trace = |args: &[&str]| {
        let mut argv = vec!["trace"];
        argv.extend_from_slice(args);
        argv.extend_from_slice(&["--json", "--workspace", ws_s]);
        let (out, peak) = util::run_peak(&argv, "");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (v, stderr(&out), peak)
    };
    let (v, err, peak) = trace(&["list", "--limit", "1"]);
    assert_eq!(v[0]["run_id"], "20260101000119-000000000000", "{err}");
    assert!(peak < 100_000, "trace list peaked at {peak} KiB");
    // Asked for more than the cap holds: the newest ones, and a note.
    let (v, err, peak) = trace(&["list", "--limit", "100"]);
    let n = v.as_array().map_or(0, Vec::len);
    assert!((5..100).contains(&n), "{n} records");
    assert_eq!(v[0]["run_id"], "20260101000119-000000000000");
    assert!(err.contains("older runs were left out"), "{err}");
    assert!(peak < 250_000, "trace list peaked at {peak} KiB");
    // `show` still finds the oldest run, by a prefix.
    let (v, err, peak) = trace(&["show", "20260101000000"]);
    assert_eq!(v["run_id"], "20260101000000-000000000000", "{err}");
    assert!(peak < 100_000, "trace show peaked at {peak} KiB");
}

/// `find_files` reads at most `MAX_DIR_ENTRIES` entries of one directory:
/// a directory of 1,000,000 entries (a writable tool makes one in a
/// minute) was listed whole (~90 MiB held per listing) before matching.
#[test]
fn find_files_bounds_the_entries_of_one_directory() {
    let ws = util::workspace(&[]);
    let big = ws.path().join("big");
    std::fs::create_dir(&big).expect("mkdir");
    for i in 0..210_000 {
        std::fs::File::create(big.join(format!("{i:0>40}"))).expect("create");
    }
    std::fs::write(ws.path().join("small.txt"), "x").expect("write");
    for tools in ["find_files", "find_definitions"] {
        let program = if tools == "find_files" {
            "find_files('big/*.py')"
        } else {
            "find_definitions('f')"
        };
        let (out, v, _) = run_peak(ws.path(), tools, program);
        assert_eq!(v["error"]["type"], "TooLarge", "{v} {}", stderr(&out));
        let msg = v["error"]["message"].as_str().unwrap_or("");
        assert!(
            msg.contains("MAX_DIR_ENTRIES") && msg.contains("big"),
            "{msg}"
        );
    }
    let (_, v) = run(ws.path(), Some("find_files"), "find_files('*.txt')");
    assert_eq!(v["value"], json!(["small.txt"]), "{v}");
}

/// A stdio MCP server's tool listings are bounded in all, not only per
/// page: a server answering every `tools/list` with one tool of an 8 MB
/// description and a next cursor had all 64 pages held and turned into
/// tool specs — `lackpy tools` took 2.5 GiB and 26 s. Past
/// `MAX_LIST_BYTES` the listing is now an error (the server's tools are
/// unavailable, with a warning naming the bound).
#[test]
fn mcp_tool_listings_are_bounded_in_all() {
    let ws = fake_mcp_workspace("--huge-list", 30);
    let (err, peak) = tools_peak(ws.path());
    assert!(err.contains("MAX_LIST_BYTES"), "{err}");
    assert!(peak < 200_000, "lackpy tools peaked at {peak} KiB");
}

/// The listings of a server are counted in values too, not only bytes:
/// pages of one tool whose schema holds 500,000 small values (1 MB a page,
/// each under the per-line count) were all held, 16 MiB of them being
/// 8 million `serde_json` values: `lackpy tools` peaked at 650 MiB. Over
/// `MAX_LIST_VALUES` the server's tools are now unavailable, with a warning.
#[test]
fn mcp_tool_listings_are_bounded_in_values() {
    let ws = fake_mcp_workspace("--many-values-list", 30);
    let (err, peak) = tools_peak(ws.path());
    assert!(err.contains("MAX_LIST_VALUES"), "{err}");
    assert!(peak < 250_000, "lackpy tools peaked at {peak} KiB");
}

/// An MCP server's answer that rmcp cannot parse fails the call at once:
/// a result nested 200 levels deep (past serde_json's 128) was skipped by
/// rmcp without a word, and the program waited for the run's wall-clock
/// limit (10 s). The line is now answered in rmcp's place with an error
/// naming why.
#[test]
fn mcp_answers_rmcp_cannot_parse_fail_the_call_at_once() {
    let ws = fake_mcp_workspace("--flood", 20);
    let start = Instant::now();
    let (out, v) = run(ws.path(), Some("deep"), "deep()");
    let took = start.elapsed();
    assert_eq!(v["error"]["kind"], "tool", "{v} {}", stderr(&out));
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        msg.contains("cannot be parsed (it nests 128 levels"),
        "{msg}"
    );
    assert!(took < Duration::from_secs(6), "took {took:?}");
}

/// An `if` with `n` `elif` branches, each of them `body`.
fn elif_chain(n: usize, body: &str) -> String {
    let mut s = format!("if a:\n {body}\n");
    for _ in 0..n {
        s.push_str(&format!("elif a:\n {body}\n"));
    }
    s
}

/// An `elif` chain is a nest of `if`s in the parsed tree (each `elif` is
/// an `if` inside the previous one's `else`), which neither the pre-scan
/// nor code intelligence counted. Before: a program-written file of 20,000
/// `elif`s (260 KB) made `find_callers` overflow the indexer thread's
/// stack and abort the supervisor (exit 134), and a 64 KiB program of
/// 5,900 `elif`s sent to the MCP `validate` or `run_program` tool
/// aborted `lackpy mcp` (a 2 MiB tokio worker stack; 4,500 were enough in
/// a debug build) for every client.
/// Now the pre-scan counts the chain as nesting: the file is skipped like
/// any other too deep to index, the program is `NestingTooDeep`, and the
/// server goes on answering.
#[test]
fn elif_chains_cannot_overflow_the_supervisors_stack() {
    let ws = tempfile::tempdir().expect("ws");
    std::fs::write(ws.path().join("deep.py"), elif_chain(20_000, "f()")).expect("deep.py");
    // A line continuation before each `elif` hid it from the first fix.
    let hidden = elif_chain(20_000, "f()").replace("elif", "\\\nelif");
    std::fs::write(ws.path().join("hidden.py"), hidden).expect("hidden.py");
    std::fs::write(ws.path().join("ok.py"), "def g():\n    f()\n").expect("ok.py");
    let (out, v) = run(ws.path(), Some("find_callers"), "find_callers('f')");
    assert_eq!(out.status.code(), Some(0), "{}\n{v}", stderr(&out));
    assert_eq!(v["value"][0]["file"], "ok.py", "{v}");
    assert_eq!(v["value"].as_array().map(Vec::len), Some(1), "{v}");

    let program = format!("a = 1\n{}", elif_chain(5_900, "1"));
    assert!(program.len() <= 64 * 1024, "{}", program.len());
    let mut mcp = util::McpLines::start(ws.path());
    for (id, tool) in [(2, "validate"), (3, "run_program")] {
        mcp.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": {"program": program}}}));
        let reply = mcp.recv(Duration::from_secs(30)).unwrap_or_default();
        assert!(
            reply.contains(&format!("\"id\":{id}")),
            "{tool}: {reply:.300}"
        );
        assert!(reply.contains("NestingTooDeep"), "{tool}: {reply:.600}");
        assert!(reply.contains("elif chain"), "{tool}: {reply:.600}");
    }
    mcp.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}));
    let reply = mcp.recv(Duration::from_secs(30)).unwrap_or_default();
    assert!(
        reply.contains("\"id\":4"),
        "the server no longer answers: {reply:.300}"
    );
}

/// A tool argument nested 150 levels deep (any tool whose argument is not
/// typed: a command tool's, an MCP server's) was written into the run's
/// trace record as JSON, which the trace readers (serde_json, 128 levels)
/// could not parse: the run, and every call it made, was missing from
/// `lackpy trace list`/`show` and the MCP `traces` tool. Such an argument
/// is now kept as a `$truncated` prefix of its text (past 64 levels).
/// Since values crossing the boundary nest at most 100 levels, the 150 of
/// then are the run's `depth` limit; 100 levels are still truncated.
#[test]
fn deep_arguments_cannot_hide_a_run_from_the_trace_readers() {
    let ws = util::workspace(&[("a.txt", "a")]);
    std::fs::create_dir_all(ws.path().join(".lackpy")).expect("mkdir");
    std::fs::write(
        ws.path().join(".lackpy/config.toml"),
        "[[tools]]\nname = \"echo\"\nprovider = \"command\"\nargv = [\"/bin/echo\", \"{x}\"]\nargs = [{ name = \"x\" }]\n",
    )
    .expect("config");
    let program = "write_file('b.txt', 'b')\nx = []\nfor i in range(99):\n    x = [x]\necho(x)\n";
    let (out, v) = run(ws.path(), Some("write_file,echo"), program);
    assert_eq!(
        v["trace"].as_array().map(Vec::len),
        Some(2),
        "{}\n{v}",
        stderr(&out)
    );
    let ws_s = ws.path().to_str().unwrap_or(".");
    let listed = util::run_with_stdin(&["trace", "list", "--json", "--workspace", ws_s], "", None);
    let list: Value = serde_json::from_slice(&listed.stdout).unwrap_or(Value::Null);
    assert_eq!(
        list.as_array().map(Vec::len),
        Some(1),
        "the run is not listed: {list}"
    );
    let id = list[0]["run_id"].as_str().unwrap_or("-").to_string();
    let shown = util::run_with_stdin(
        &["trace", "show", &id, "--json", "--workspace", ws_s],
        "",
        None,
    );
    let rec: Value = serde_json::from_slice(&shown.stdout).unwrap_or(Value::Null);
    assert_eq!(rec["calls"][0]["tool"], "write_file", "{rec}");
    let arg = &rec["calls"][1]["args"][0]["$truncated"];
    assert!(
        arg["prefix"]
            .as_str()
            .is_some_and(|p| p.starts_with("[[[[")),
        "{rec}"
    );
}

/// A host application's config file (`[mcp] host_configs`) was parsed whole
/// into `serde_json` values, though only its `mcpServers` tables are used:
/// Claude Code's `~/.claude.json` keeps per-project state beside them, and
/// 15 MB of it (`0,0,…`) took `lackpy tools` to 561 MiB. Everything but the
/// tables is now skipped unbuilt (30 MiB), and the tables are counted
/// before they are parsed.
#[test]
fn host_config_files_are_not_parsed_whole() {
    let host = tempfile::tempdir().expect("tempdir");
    let file = host.path().join("host.json");
    let state = "0,".repeat(7_500_000);
    let text = format!(
        "{{\"numStartups\": 3, \"projects\": {{\"/other\": {{\"history\": [{state}0]}}}}, \"mcpServers\": {{\"x\": {{\"command\": \"/nonexistent/lackpy-test-srv\"}}}}}}"
    );
    std::fs::write(&file, text).expect("host.json");
    let cfg = format!("[mcp]\nhost_configs = [{:?}]\n", file.display().to_string());
    let ws = util::workspace(&[(".lackpy/config.toml", &cfg)]);
    // The server of the file was read (and fails to start).
    let (err, peak) = tools_peak(ws.path());
    assert!(err.contains("mcp server x"), "{err}");
    assert!(peak < 150_000, "lackpy tools peaked at {peak} KiB");
}

/// A client's confirmed `delegate` results are promoted to workspace
/// templates (`.lackpy/templates.toml`), each holding the client's intent
/// (up to 8 KiB) and the program. Before: nothing bounded the file, and
/// once it was over the 1 MiB that is read back (140 promotions of a
/// 4 KB glob intent, 14 s over one MCP session), every later `delegate`
/// of the workspace, of every client and of the CLI, failed with
/// "templates.toml is larger than 1048576 bytes". The oldest promoted
/// templates now make room.
#[test]
fn promoted_templates_cannot_break_delegate() {
    let ws = util::workspace(&[
        (".lackpy/config.toml", "[inference]\npromote_after = 1\n"),
        ("a.py", "x = 1\n"),
    ]);
    let mut mcp = util::McpLines::start(ws.path());
    let call = |mcp: &mut util::McpLines, id: u64, tool: &str, args: Value| -> Value {
        mcp.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}));
        let line = mcp.recv(Duration::from_secs(60)).unwrap_or_default();
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        v["result"]["structuredContent"].clone()
    };
    let long = "a".repeat(3990);
    for i in 0..140u64 {
        let r = call(
            &mut mcp,
            10 + 2 * i,
            "delegate",
            json!({"intent": format!("count files {long}{i}*.py")}),
        );
        assert_eq!(r["ok"], true, "{i}: {r}");
        let id = r["run_id"].as_str().unwrap_or("").to_string();
        let c = call(
            &mut mcp,
            11 + 2 * i,
            "confirm_result",
            json!({"run_id": id, "correct": true}),
        );
        assert_eq!(c["ok"], true, "{i}: {c}");
    }
    let size = std::fs::metadata(ws.path().join(".lackpy/templates.toml")).map_or(0, |m| m.len());
    assert!(size <= 1024 * 1024, "templates.toml is {size} bytes");
    let r = call(
        &mut mcp,
        1000,
        "delegate",
        json!({"intent": "count python files"}),
    );
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["value"], 1, "{r}");
}

/// `search_tools` compared every word of its query with every word of
/// every tool's name and description: a query of 340,000 words (1 MiB,
/// within the request line cap) took 19 s of a server thread's CPU with
/// only the builtins (more with every configured tool), and a client may
/// have 64 requests in flight. A query over `MAX_QUERY_BYTES` is now a
/// `BadArgument` at once.
#[test]
fn search_tools_bounds_its_query() {
    let ws = util::workspace(&[("a.txt", "a")]);
    let mut mcp = util::McpLines::start(ws.path());
    let start = Instant::now();
    mcp.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "search_tools", "arguments": {"query": "zq ".repeat(340_000)}}}));
    let reply = mcp.recv(Duration::from_secs(60)).unwrap_or_default();
    let took = start.elapsed();
    assert!(reply.contains("MAX_QUERY_BYTES"), "{reply:.300}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    mcp.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "search_tools", "arguments": {"query": "read a file"}}}));
    let reply = mcp.recv(Duration::from_secs(30)).unwrap_or_default();
    assert!(reply.contains("read_file"), "{reply:.300}");
}

/// Requests and notifications an MCP server starts itself were all handed
/// to rmcp, which starts a task for each; a request's task holds its
/// answer until the server reads it. A server sending 200,000 of each
/// (1 KB notifications, `roots/list` requests) during a call, reading
/// nothing, took `lackpy run` to 918 MiB and past the run's wall clock.
/// At most `MAX_SERVER_REQUESTS` now wait for an answer and notifications
/// pass at a bounded rate; the call gets its answer.
#[test]
fn mcp_server_requests_and_notifications_are_bounded() {
    let ws = fake_mcp_workspace("--flood", 30);
    let ws_s = ws.path().to_str().unwrap_or(".");
    let args = [
        "run",
        "--json",
        "--workspace",
        ws_s,
        "--tools",
        "chatty",
        "-",
    ];
    let (out, peak) = util::run_peak(&args, "chatty(n=200000)");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(v["value"], "done", "{v} {}", stderr(&out));
    assert!(
        stderr(&out).contains("MAX_SERVER_REQUESTS"),
        "{}",
        stderr(&out)
    );
    assert!(peak < 150_000, "lackpy run peaked at {peak} KiB");
}

/// Bytes in regular files, and directories, under `dir` (not following
/// symlinks), `.lackpy/` left out.
fn disk_use(dir: &Path) -> (u64, u64) {
    let (mut bytes, mut dirs) = (0, 0);
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(m) = std::fs::symlink_metadata(e.path()) else {
                continue;
            };
            if m.is_dir() && e.file_name() != ".lackpy" {
                dirs += 1;
                todo.push(e.path());
            } else if m.is_file() {
                bytes += m.len();
            }
        }
    }
    (bytes, dirs)
}

/// A program granted `write_file` had no budget of bytes written per run:
/// a loop of 8 MB writes filled 214 MB of the workspace's disk in one
/// 10 s run, and one of 4 KiB paths (`0/a/a/…/f`) made 73,479 directories
/// (288 MB of disk) in the same time. Each run now has a `write_bytes`
/// budget (default 64 MiB, `[sandbox] write_mb` / `write_bytes`): every
/// file written costs its content in whole 4 KiB blocks, every directory
/// created one block, charged before it is written; past the budget the
/// run ends with the `write_bytes` limit, naming the key that raises it.
/// The server goes on serving, and the next run has a budget of its own.
#[test]
fn writes_are_bounded_per_run() {
    let ws = util::workspace(&[(".lackpy/config.toml", "[sandbox]\nwrite_mb = 1\n")]);
    let content = "x = 'a' * 300000\nfor i in range(100):\n    write_file('f' + str(i), x)\n";
    let (out, v) = run(ws.path(), Some("write_file"), content);
    assert_eq!(v["ok"], false, "{v} {}", stderr(&out));
    assert_eq!(v["error"]["kind"], "limit", "{v}");
    assert_eq!(v["error"]["type"], "write_bytes", "{v}");
    let msg = v["error"]["message"].as_str().unwrap_or("");
    assert!(msg.contains("1048576") && msg.contains("write_mb"), "{msg}");
    let trace = v["trace"].as_array().cloned().unwrap_or_default();
    assert_eq!(trace.len(), 4, "{v}");
    assert_eq!(trace[3]["ok"], false, "{v}");
    let (bytes, _) = disk_use(ws.path());
    assert_eq!(bytes, 900_000, "three files of 300,000 bytes");

    let ws = util::workspace(&[(".lackpy/config.toml", "[sandbox]\nwrite_mb = 1\n")]);
    let deep =
        "p = 'a/' * 2040\nfor i in range(10000):\n    write_file(str(i) + '/' + p + 'f', '')\n";
    let (out, v) = run(ws.path(), Some("write_file"), deep);
    assert_eq!(
        v["error"]["type"],
        "write_bytes",
        "{v:.300} {}",
        stderr(&out)
    );
    let (_, dirs) = disk_use(ws.path());
    assert!(dirs <= 256, "{dirs} directories for a 1 MiB budget");

    // Over MCP: a run past the budget, then one within it, on one server.
    let ws = util::workspace(&[(".lackpy/config.toml", "[sandbox]\nwrite_mb = 1\n")]);
    let mut mcp = util::McpLines::start(ws.path());
    let mut call = |id: u64, program: &str| -> Value {
        mcp.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "run_program",
                       "arguments": {"program": program, "tools": ["write_file"]}}}));
        let line = mcp.recv(Duration::from_secs(60)).unwrap_or_default();
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        v["result"]["structuredContent"].clone()
    };
    let r = call(2, content);
    assert_eq!(r["error"]["type"], "write_bytes", "{r}");
    let r = call(3, "write_file('g', 'a' * 1000000)");
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(
        std::fs::metadata(ws.path().join("g")).map_or(0, |m| m.len()),
        1_000_000
    );
}

/// A request of many small JSON values costs far more parsed than its
/// bytes (a 1 MiB body of `[0,0,…]`, 512K values: ~125 MiB while parsed),
/// and `lackpy serve --listen` parses the bodies of one session's POSTs
/// concurrently: 96 such bodies posted at once took it to 3.6 GiB (32:
/// 1.2 GiB; 512 TCP connections are allowed), 30 such lines on as many
/// unix-socket connections to 362 MiB. A body or line of more than
/// `MAX_REQUEST_VALUES` values is now refused unparsed, naming the cap:
/// 413 over HTTP (the same 96 bodies: 105 MiB), an error with the
/// request's id over a stream; the server goes on serving.
#[test]
fn request_values_are_counted_before_they_are_parsed() {
    use crate::serve_http::{config, initialize, post, run, structured, Server, TOKEN_A};
    let ws = util::workspace(&[]);
    let srv = Server::start(&config(ws.path(), "", ""));
    let sid = initialize(&srv.addr, TOKEN_A);
    let zeros = vec!["0"; 500_000].join(",");
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"run_program","arguments":{{"program":"1","x":[{zeros}]}}}}}}"#
    );
    let msg: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let posts: Vec<_> = (0..32)
        .map(|_| {
            let (addr, sid, msg) = (srv.addr.clone(), sid.clone(), msg.clone());
            std::thread::spawn(move || post(&addr, Some(TOKEN_A), Some(&sid), &msg))
        })
        .collect();
    for p in posts {
        let r = p.join().expect("post");
        assert_eq!(r.status, 413, "{:.300}", r.body);
        assert!(r.body.contains("MAX_REQUEST_VALUES"), "{:.300}", r.body);
    }
    let peak = crate::serve::status_kib(srv.child.id(), "VmHWM:");
    assert!(peak < 300_000, "lackpy serve peaked at {peak} KiB");
    let r = run(&srv.addr, TOKEN_A, &sid, "1 + 1", None);
    assert_eq!(structured(&r)["value"], 2, "{r:?}");

    // Over a stream (`lackpy mcp`): an error with the request's id.
    let mut mcp = util::McpLines::start(ws.path());
    mcp.send(&msg);
    let line = mcp.recv(Duration::from_secs(60)).unwrap_or_default();
    assert!(line.contains("MAX_REQUEST_VALUES"), "{line:.300}");
    assert!(line.contains("\"id\":5"), "{line:.300}");
    mcp.send(&json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
        "params": {"name": "run_program", "arguments": {"program": "1 + 2"}}}));
    let line = mcp.recv(Duration::from_secs(60)).unwrap_or_default();
    assert!(
        line.contains("\"id\":6") && line.contains("\"value\":3"),
        "{line:.300}"
    );
}

/// The TCP cap of `lackpy serve --listen` (`serve.http.max_connections`)
/// counted every open connection alike, before any token: anyone who can
/// connect held every slot with silent connections (renewed every
/// `request_timeout_seconds`) and every client got `503 over_cap` (520
/// against the default 512). At the cap the oldest connection that has not
/// sent a request with a valid token is now closed to make room; a client
/// with a token is served.
#[test]
fn silent_connections_cannot_keep_clients_out() {
    use crate::serve_http::{config, initialize, post, run, structured, Server, TOKEN_A};
    let ws = util::workspace(&[]);
    let srv = Server::start(&config(ws.path(), "", "max_connections = 16"));
    let silent: Vec<std::net::TcpStream> = (0..40)
        .filter_map(|_| std::net::TcpStream::connect(&srv.addr).ok())
        .collect();
    assert_eq!(silent.len(), 40);
    std::thread::sleep(Duration::from_millis(300));
    // While the server is still working through the silent connections'
    // evictions (a loaded machine: CI saw it take over 300 ms), a
    // newcomer may be told `503` with `Retry-After: 1`; a client honouring
    // it gets in at the next try. Before the fix the silent connections
    // kept every slot until `request_timeout_seconds` (10), so every try
    // of these 4 seconds failed.
    for _ in 0..4 {
        let r = post(
            &srv.addr,
            Some(TOKEN_A),
            None,
            &serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        );
        if r.status != 503 {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let sid = initialize(&srv.addr, TOKEN_A);
    let r = run(&srv.addr, TOKEN_A, &sid, "6 * 7", None);
    assert_eq!(structured(&r)["value"], 42, "{r:?}");
    drop(silent);
}

/// One `traces` call holds several copies of up to 8 MiB of records while
/// it builds and renders its reply (~60 MiB), and nothing bounded how many
/// ran at once but the client's in-flight requests: 64 calls posted at
/// once in one `lackpy serve --listen` session took the server to
/// 1.2 GiB. At most `MAX_TRACE_READS` (2) are now served at once per
/// process (the same 64: 155 MiB); every call is still answered. (Now 28
/// at once: a client holds at most 32 HTTP requests in progress.)
#[test]
fn concurrent_traces_calls_are_bounded() {
    use crate::serve_http::{config, initialize, post, run, structured, Server, TOKEN_A};
    let ws = util::workspace(&[]);
    let srv = Server::start(&config(ws.path(), "", ""));
    let sid = initialize(&srv.addr, TOKEN_A);
    let prog = "p = 'z' * 1000\nfor i in range(1000):\n    find_files(p + str(i))\nlen(p)";
    for _ in 0..12 {
        let r = run(&srv.addr, TOKEN_A, &sid, prog, None);
        assert_eq!(structured(&r)["value"], 1000, "{:.300}", r.body);
    }
    let before = crate::serve::status_kib(srv.child.id(), "VmHWM:");
    // Each with its own id (a request reusing a pending one's id is
    // refused); 28, under the client's share of HTTP requests in progress
    // (32): a reply's slot is given back when the server drops its body,
    // which can come a moment after the client has read the reply.
    let calls: Vec<_> = (0..28)
        .map(|i| {
            let msg = json!({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call",
                "params": {"name": "traces", "arguments": {"limit": 1000}}});
            let (addr, sid) = (srv.addr.clone(), sid.clone());
            std::thread::spawn(move || post(&addr, Some(TOKEN_A), Some(&sid), &msg))
        })
        .collect();
    for c in calls {
        let r = c.join().expect("traces");
        assert_eq!(structured(&r)["ok"], true, "{:.300}", r.body);
    }
    let peak = crate::serve::status_kib(srv.child.id(), "VmHWM:");
    assert!(
        peak < before.max(100_000) + 250_000,
        "lackpy serve peaked at {peak} KiB ({before} KiB before the traces calls)"
    );
}

/// Kit files in the workspace's `.lackpy/kits/` were each capped at
/// 4 MiB, but not in number (10,000) nor in lines: every line is kept as
/// a tool name, so three 4 MiB kits of `a` lines took `lackpy run 1+1` to
/// 359 MiB (and 10,000 files would be 40 GiB to read). Now the kits
/// together are capped at `MAX_KITS_BYTES` and each at `MAX_KIT_TOOLS`
/// lines, counted before parsing: a clear config error (exit 3), small.
#[test]
fn hostile_kit_files_are_bounded() {
    let ws = util::workspace(&[]);
    let kits = ws.path().join(".lackpy/kits");
    std::fs::create_dir_all(&kits).expect("kits dir");
    let lines = "a\n".repeat(2 * 1024 * 1024 - 1);
    for i in 0..3 {
        std::fs::write(kits.join(format!("k{i}.kit")), &lines).expect("kit");
    }
    let ws_s = ws.path().to_str().expect("utf-8 path");
    let (out, peak) = util::run_peak(&["run", "--workspace", ws_s, "-c", "1 + 1"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("MAX_KIT_TOOLS"), "{err}");
    assert!(peak < 100_000, "lackpy run peaked at {peak} KiB");
    // Many small kits, together over the byte cap.
    for i in 0..3 {
        std::fs::remove_file(kits.join(format!("k{i}.kit"))).expect("rm");
    }
    let comment = format!("# {}\ntool\n", "x".repeat(1024 * 1024 - 10));
    for i in 0..6 {
        std::fs::write(kits.join(format!("c{i}.kit")), &comment).expect("kit");
    }
    let (out, _) = util::run_peak(&["run", "--workspace", ws_s, "-c", "1 + 1"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("MAX_KITS_BYTES"), "{err}");
    // A real kit still loads.
    for i in 0..6 {
        std::fs::remove_file(kits.join(format!("c{i}.kit"))).expect("rm");
    }
    std::fs::write(
        kits.join("small.kit"),
        "---\ndescription: d\n---\nread_file\n",
    )
    .expect("kit");
    let (out, _) = util::run_peak(&["run", "--workspace", ws_s, "-c", "1 + 1"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A workspace's `.lackpy/config.toml` is capped at 4 MiB, but TOML's
/// parser holds every small item with its spans: 4 MiB of `{},` inline
/// tables took `lackpy run 1+1` to 295 MiB (of `[tN]` headers, 206 MiB),
/// at every load; and a config error echoed a dotted key whole (600 KB
/// of `x.x.x…` on stderr). Now items are counted before parsing
/// (`MAX_CONFIG_ITEMS`) and a key in an error is cut.
#[test]
fn hostile_config_files_are_bounded() {
    let ws = util::workspace(&[]);
    let ctl = ws.path().join(".lackpy");
    std::fs::create_dir_all(&ctl).expect(".lackpy");
    let ws_s = ws.path().to_str().expect("utf-8 path");
    let config = ctl.join("config.toml");
    std::fs::write(&config, format!("a = [{}]\n", "{},".repeat(1_390_000))).expect("config");
    let (out, peak) = util::run_peak(&["run", "--workspace", ws_s, "-c", "1 + 1"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err:.500}");
    assert!(err.contains("MAX_CONFIG_ITEMS"), "{err:.500}");
    assert!(peak < 100_000, "lackpy run peaked at {peak} KiB");
    std::fs::write(&config, format!("{} = 1\n", vec!["x"; 60_000].join("."))).expect("config");
    let (out, _) = util::run_peak(&["run", "--workspace", ws_s, "-c", "1 + 1"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err:.500}");
    assert!(err.len() < 4096, "{} bytes of error: {err:.500}", err.len());
    // A real config still loads.
    std::fs::write(&config, "[sandbox]\ntimeout_seconds = 5\n").expect("config");
    let (out, _) = util::run_peak(&["run", "--workspace", ws_s, "-c", "1 + 1"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Code intelligence bounded the index one call holds
/// (`MAX_TOTAL_INDEX_BYTES`), but not how many calls held one at once,
/// and concurrent calls that miss the cache on the same file each parse
/// their own copy: eight runs of `lackpy mcp` (its runs in flight) calling
/// `find_callers` over three program-written 1 MiB files of `f();f();…`
/// took the server to 509 MiB (seven files: 741 MiB, the runs timing out
/// on two cores), more with more cores. At most `MAX_INDEXERS` (2) calls
/// now index at once per process, the others waiting their turn, and a
/// call needing a file another is indexing waits for that index: the same
/// calls peak at 190-240 MiB (seven files: 300 MiB), every one answered.
#[test]
fn concurrent_code_intelligence_calls_are_bounded() {
    let cfg = "[sandbox]\ntimeout_seconds = 120\n";
    let ws = util::workspace(&[(".lackpy/config.toml", cfg)]);
    let mut mcp = util::McpLines::start(ws.path());
    let wait = Duration::from_secs(180);
    let call = |id: u64, program: &str, tools: &[&str]| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "run_program", "arguments": {"program": program, "tools": tools}}})
    };
    let write = "body = 'f();' * 254000\nfor i in range(3):\n    \
                 write_file('m' + str(i) + '.py', '# ' + str(i) + '\\n' + body + '\\n')\n";
    mcp.send(&call(2, write, &["write_file"]));
    let r: Value = serde_json::from_str(&mcp.recv(wait).unwrap_or_default()).unwrap_or_default();
    assert_eq!(r["result"]["structuredContent"]["ok"], true, "{r:.300}");
    let before = crate::serve::status_kib(mcp.pid(), "VmHWM:");
    for id in 10..18 {
        mcp.send(&call(id, "len(find_callers('zz'))", &["find_callers"]));
    }
    for _ in 10..18 {
        let line = mcp.recv(wait).unwrap_or_default();
        let r: Value = serde_json::from_str(&line).unwrap_or_default();
        let sc = &r["result"]["structuredContent"];
        assert_eq!(sc["ok"], true, "{line:.300}");
        assert_eq!(sc["value"], 0, "{line:.300}");
    }
    let peak = crate::serve::status_kib(mcp.pid(), "VmHWM:");
    assert!(
        peak < before.max(30_000) + 330_000,
        "lackpy mcp peaked at {peak} KiB ({before} KiB before the find_callers calls)"
    );
}

/// Trace files are control files, which a cloned repository can hold,
/// and their records were parsed whole once kept within the byte cap
/// (16 MiB for `lackpy trace`, 8 MiB for the MCP `traces` tool), though a
/// parsed value costs far more than its bytes: three records of 4 MiB of
/// `0,0,…` took `lackpy trace list` to 461 MiB, one `traces` call over
/// them `lackpy mcp` to 316 MiB (four calls: 620 MiB). Records are now
/// counted before they are parsed (`max_bytes / BYTES_PER_VALUE` values):
/// such records are left out, an older ordinary one is still shown.
#[test]
fn hostile_trace_records_are_counted_before_they_are_parsed() {
    let ws = util::workspace(&[]);
    let traces = ws.path().join(".lackpy/traces");
    std::fs::create_dir_all(&traces).expect("traces dir");
    let record = |id: &str, time: &str, grade: &str| {
        format!(
            "{{\"run_id\":\"{id}\",\"time\":\"{time}\",\"program_sha256\":\"\",\"program\":\"\",\
             \"profile\":\"\",\"grade\":{grade},\"jail_level\":\"full\",\"calls\":[],\"outcome\":\"ok\",\
             \"error\":null,\"limit_hit\":null,\"limits\":{{}},\"duration_us\":1}}\n"
        )
    };
    let zeros = format!("[{}0]", "0,".repeat(2 * 1024 * 1024 - 100));
    let mut hostile = String::new();
    for i in 0..3 {
        hostile.push_str(&record(
            &format!("big{i}"),
            &format!("2026-12-07T00:00:0{i}Z"),
            &zeros,
        ));
    }
    std::fs::write(traces.join("2026-12-07.jsonl"), hostile).expect("hostile traces");
    let small = record("small", "2026-12-06T00:00:00Z", "{\"w\":0,\"d\":0}");
    std::fs::write(traces.join("2026-12-06.jsonl"), small).expect("small trace");
    let ws_s = ws.path().to_str().unwrap_or(".");

    let argv = [
        "trace",
        "list",
        "--limit",
        "3",
        "--json",
        "--workspace",
        ws_s,
    ];
    let (out, peak) = util::run_peak(&argv, "");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let shown: Vec<&Value> = v.as_array().map_or(Vec::new(), |a| a.iter().collect());
    let ids: Vec<&Value> = shown.iter().map(|r| &r["run_id"]).collect();
    assert_eq!(ids, [&json!("small")], "{}", stderr(&out));
    assert!(stderr(&out).contains("JSON values"), "{}", stderr(&out));
    assert!(peak < 150_000, "trace list peaked at {peak} KiB");

    let mcp = util::McpLines::start(ws.path());
    let before = crate::serve::status_kib(mcp.pid(), "VmHWM:");
    let mut mcp = mcp;
    mcp.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "traces", "arguments": {"limit": 3}}}));
    let line = mcp.recv(Duration::from_secs(60)).unwrap_or_default();
    let r: Value = serde_json::from_str(&line).unwrap_or_default();
    let sc = &r["result"]["structuredContent"];
    assert_eq!(sc["traces"][0]["run_id"], "small", "{line:.300}");
    let peak = crate::serve::status_kib(mcp.pid(), "VmHWM:");
    assert!(
        peak < before.max(30_000) + 120_000,
        "lackpy mcp peaked at {peak} KiB ({before} KiB before the traces call)"
    );
}

/// A workspace's `.lackpy/templates.toml` (a cloned repository's) was
/// capped at 1 MiB but its TOML items were not counted, as
/// `config.toml`'s are: 1 MiB of `{},` took `lackpy delegate` to 75 MiB
/// (14 MiB without the file), at every delegation. Now the items are
/// counted before parsing (`MAX_CONFIG_ITEMS`), and the ratchet keeps the
/// file it writes within that count.
#[test]
fn hostile_templates_files_are_counted_before_parsing() {
    let ws = util::workspace(&[("a.py", "x = 1\n")]);
    let ctl = ws.path().join(".lackpy");
    std::fs::create_dir_all(&ctl).expect(".lackpy");
    let hostile = format!("a = [{}]\n", "{},".repeat(349_000));
    std::fs::write(ctl.join("templates.toml"), hostile).expect("templates");
    let ws_s = ws.path().to_str().expect("utf-8 path");
    let argv = [
        "delegate",
        "--json",
        "--workspace",
        ws_s,
        "count python files",
    ];
    let (out, peak) = util::run_peak(&argv, "");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert_ne!(out.status.code(), Some(0), "{said:.500}");
    assert!(said.contains("MAX_CONFIG_ITEMS"), "{said:.500}");
    assert!(peak < 40_000, "lackpy delegate peaked at {peak} KiB");
    // A real templates file still answers.
    let ok = "[[templates]]\nname = \"n\"\npattern = \"count python files\"\n\
              program = \"len(find_files('*.py'))\"\n";
    std::fs::write(ctl.join("templates.toml"), ok).expect("templates");
    let (out, _) = util::run_peak(&argv, "");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(v["value"], 1, "{v}\n{}", stderr(&out));
}

/// Trace rotation removed the oldest files by *name* and never the last
/// one: a foreign `.lackpy/traces/9999-12-31.jsonl` (a cloned
/// repository's) larger than `total_mb` was never removed, and every
/// rotation removed the user's traces instead, the file just written
/// included: the run's record was lost. Files are now removed oldest by
/// modification time (which no program can set), never one just written.
#[test]
fn a_foreign_trace_file_cannot_make_rotation_remove_new_traces() {
    let cfg = "[trace]\narg_bytes = 1048576\nrun_bytes = 4194304\nfile_mb = 1\ntotal_mb = 2\n";
    let ws = util::workspace(&[(".lackpy/config.toml", cfg)]);
    let traces = ws.path().join(".lackpy/traces");
    std::fs::create_dir_all(&traces).expect("traces dir");
    let foreign = traces.join("9999-12-31.jsonl");
    std::fs::write(&foreign, "{}\n".repeat(1_000_000)).expect("foreign");
    let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&foreign)
        .and_then(|f| f.set_modified(hour_ago))
        .expect("mtime");
    for i in 0..3 {
        let prog = format!("read_file('run-{i}-' + 'x' * 600000)");
        let (out, v) = run(ws.path(), Some("read_file"), &prog);
        let said = format!("{v}");
        assert_eq!(v["ok"], false, "{said:.300}\n{}", stderr(&out));
    }
    let mut all = String::new();
    for name in names(&traces) {
        all.push_str(&std::fs::read_to_string(traces.join(&name)).unwrap_or_default());
    }
    for i in 1..3 {
        let mark = format!("run-{i}-");
        assert!(all.contains(&mark), "run {i} lost: {:?}", names(&traces));
    }
    assert!(!foreign.exists(), "{:?}", names(&traces));
}

/// A foreign `.lackpy/traces/<today>_999.jsonl` (the last rotation
/// suffix; a cloned repository can hold one for each day to come) made the
/// day's records go there and stay: never rotated, so neither `file_mb`
/// nor `total_mb` applied (eight 600 KB runs made one 4.8 MB file under
/// `total_mb = 2`). Past the last suffix the first free one is now taken.
#[test]
fn a_foreign_last_rotation_cannot_disable_the_trace_caps() {
    let cfg = "[trace]\narg_bytes = 1048576\nrun_bytes = 4194304\nfile_mb = 1\ntotal_mb = 2\n";
    let ws = util::workspace(&[(".lackpy/config.toml", cfg)]);
    let traces = ws.path().join(".lackpy/traces");
    std::fs::create_dir_all(&traces).expect("traces dir");
    let day = std::process::Command::new("date")
        .args(["-u", "+%F"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .expect("date");
    std::fs::write(traces.join(format!("{day}_999.jsonl")), "").expect("foreign");
    for i in 0..8 {
        let prog = format!("read_file('run-{i}-' + 'x' * 600000)");
        let (out, v) = run(ws.path(), Some("read_file"), &prog);
        let said = format!("{v}");
        assert_eq!(v["ok"], false, "{said:.300}\n{}", stderr(&out));
    }
    let (mut total, mut all) = (0, String::new());
    for name in names(&traces) {
        let text = std::fs::read_to_string(traces.join(&name)).unwrap_or_default();
        assert!(text.len() <= 1 << 20, "{name}: {} bytes", text.len());
        total += text.len();
        all.push_str(&text);
    }
    assert!(total <= 3 << 20, "{total} bytes: {:?}", names(&traces));
    assert!(all.contains("run-7-"), "{:?}", names(&traces));
}

/// A `.lackpy/traces/` of more than 100,000 entries (`MAX_FILES`; a
/// cloned repository's, none of them a trace file) made every listing of
/// it fail: the total cap was never enforced (eight 600 KB runs made
/// 4.8 MB under `total_mb = 2`, with a warning that the trace was "not
/// written" and the directory "larger than 100000 bytes"), and `lackpy
/// trace list` showed nothing. Only trace files (`*.jsonl`) are now
/// listed and counted.
#[test]
fn foreign_entries_in_the_trace_dir_cannot_disable_the_cap_or_the_readers() {
    let cfg = "[trace]\narg_bytes = 1048576\nrun_bytes = 4194304\nfile_mb = 1\ntotal_mb = 2\n";
    let ws = util::workspace(&[(".lackpy/config.toml", cfg)]);
    let traces = ws.path().join(".lackpy/traces");
    std::fs::create_dir_all(&traces).expect("traces dir");
    for i in 0..100_001 {
        std::fs::File::create(traces.join(format!("f{i}"))).expect("foreign entry");
    }
    for i in 0..8 {
        let prog = format!("read_file('run-{i}-' + 'x' * 600000)");
        let (out, v) = run(ws.path(), Some("read_file"), &prog);
        let said = format!("{v}");
        assert_eq!(v["ok"], false, "{said:.300}\n{}", stderr(&out));
        assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    }
    let mut total = 0;
    for name in names(&traces).iter().filter(|n| n.ends_with(".jsonl")) {
        total += std::fs::metadata(traces.join(name)).map_or(0, |m| m.len());
    }
    assert!(total <= 3 << 20, "{total} bytes of traces");
    let ws_s = ws.path().to_str().unwrap_or(".");
    let out = util::run_with_stdin(
        &[
            "trace",
            "list",
            "--json",
            "--limit",
            "1",
            "--workspace",
            ws_s,
        ],
        "",
        None,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("run-7-"), "{:.300}\n{}", text, stderr(&out));
}

/// `lackpy trace list`/`show` and the MCP `traces` tool read trace files
/// newest first by *name*: a foreign `.lackpy/traces/9999-12-31.jsonl` (a
/// cloned repository's) came first, and its forged record was shown as
/// the newest run, in place of the real one. Files are now read newest
/// first by modification time (which a clone cannot set), as rotation
/// removes them.
#[test]
fn a_foreign_trace_file_cannot_stand_for_the_newest_runs() {
    let ws = util::workspace(&[]);
    let traces = ws.path().join(".lackpy/traces");
    std::fs::create_dir_all(&traces).expect("traces dir");
    let forged = "{\"run_id\":\"FORGED\",\"time\":\"9999-12-31T00:00:00Z\",\"program_sha256\":\"\",\
                  \"program\":\"print('nothing to see')\",\"profile\":\"\",\"grade\":{\"w\":0,\"d\":0},\
                  \"jail_level\":\"full\",\"calls\":[],\"outcome\":\"ok\",\"error\":null,\
                  \"limit_hit\":null,\"limits\":{},\"duration_us\":1}\n";
    let foreign = traces.join("9999-12-31.jsonl");
    std::fs::write(&foreign, forged).expect("forged");
    let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&foreign)
        .and_then(|f| f.set_modified(hour_ago))
        .expect("mtime");
    let ws_s = ws.path().to_str().unwrap_or(".");
    let list = || {
        let argv = [
            "trace",
            "list",
            "--json",
            "--limit",
            "1",
            "--workspace",
            ws_s,
        ];
        let out = util::run_with_stdin(&argv, "", None);
        serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null)
    };
    assert_eq!(
        list()[0]["run_id"],
        "FORGED",
        "the forged record reads back"
    );
    let (_, v) = run(ws.path(), None, "2 + 2  # the real run");
    assert_eq!(v["ok"], true, "{v}");
    let newest = list();
    assert!(
        newest[0]["program"]
            .as_str()
            .is_some_and(|p| p.contains("the real run")),
        "{newest}"
    );
}
