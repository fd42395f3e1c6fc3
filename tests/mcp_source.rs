//! MCP servers as tool sources: `[mcp_servers.X]` in a workspace config,
//! driven through the real `lackpy` binary against a small stdio MCP server
//! (tests/fixtures/mcp_server.py, stdlib Python).

use crate::util;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_server.py")
}

/// A workspace whose config declares the fake server (plus `extra` TOML).
fn ws_with(extra: &str) -> tempfile::TempDir {
    assert!(util::have_python(), "python3 is required for this test");
    let cfg = format!(
        "[mcp_servers.fake]\ncommand = \"python3\"\nargs = [{:?}]\ntimeout_seconds = 2\n\n{extra}",
        fixture().display().to_string()
    );
    util::workspace(&[(".lackpy/config.toml", &cfg), ("hello.txt", "hi there")])
}

fn run(ws: &Path, tools: &str, program: &str) -> (Output, Value) {
    let out = util::run_json(ws, tools, program);
    let v = util::json(&out);
    (out, v)
}

/// `program` run with `tools` in a fresh workspace of the fake server.
fn run_fake(tools: &str, program: &str) -> (tempfile::TempDir, Output, Value) {
    let ws = ws_with("");
    let (out, r) = run(ws.path(), tools, program);
    (ws, out, r)
}

/// The run succeeded (its stderr in the message otherwise).
fn assert_ran(out: &Output, r: &Value) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(r["ok"], true, "{r} {stderr}");
}

fn tools_json(ws: &Path) -> (Output, Value) {
    let out = util::run_with_stdin(
        &["tools", "--json", "--workspace", ws.to_str().unwrap_or(".")],
        "",
        None,
    );
    let v = util::json(&out);
    (out, v)
}

/// The entry for `name` in `lackpy tools --json` (an array or `{tools: [...]}`).
fn tool<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    let list = v
        .as_array()
        .or_else(|| v.get("tools").and_then(Value::as_array))?;
    list.iter()
        .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
}

fn grade_of(t: &Value) -> (u64, u64) {
    let g = |k: &str, alt: &str| {
        t.get("grade")
            .and_then(|g| g.get(k))
            .or_else(|| t.get(alt))
            .and_then(Value::as_u64)
            .unwrap_or(99)
    };
    (g("w", "grade_w"), g("d", "effects_ceiling"))
}

#[test]
fn tools_lists_discovered_tools_with_grades_from_annotations() {
    let ws = ws_with("");
    let (out, v) = tools_json(ws.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let echo = tool(&v, "echo").expect("echo listed");
    assert_eq!(grade_of(echo), (1, 0), "read-only: {echo}");
    let wipe = tool(&v, "wipe").expect("wipe listed");
    assert_eq!(grade_of(wipe), (2, 3), "destructive: {wipe}");
    let plain = tool(&v, "plain").expect("plain listed");
    assert_eq!(grade_of(plain), (2, 2), "no annotations: {plain}");
    // Builtins keep their names and are still there.
    assert!(tool(&v, "read_file").is_some());
    // Arguments come from the schema, `required` order first.
    let add = tool(&v, "add").expect("add listed").to_string();
    let (a, b) = (add.find("\"a\""), add.find("\"b\""));
    assert!(a.is_some() && b.is_some() && a < b, "{add}");
}

#[test]
fn grade_override_applies() {
    let ws = ws_with("[mcp_servers.fake.tools.plain]\ngrade = { w = 0, d = 1 }\n");
    let (_, v) = tools_json(ws.path());
    let plain = tool(&v, "plain").expect("plain listed");
    assert_eq!(grade_of(plain), (0, 1), "{plain}");
    let (out, r) = run(ws.path(), "plain", "plain('q')");
    assert_ran(&out, &r);
    assert_eq!(r["value"], "plain:q");
    assert_eq!(r["grade"]["w"], 0);
    assert_eq!(r["grade"]["d"], 1);
}

#[test]
fn read_only_tool_call_works_and_is_traced() {
    let prog = "r = echo('hi')\ns = add(2, b=3)\n[r, s['sum'], whereami()['cwd']]";
    let (ws, out, r) = run_fake("echo,add,whereami", prog);
    assert_ran(&out, &r);
    let cwd = ws.path().canonicalize().expect("canonical ws");
    assert_eq!(r["value"][0], "hi");
    assert_eq!(r["value"][1], 5);
    assert_eq!(r["value"][2], cwd.to_str().unwrap_or(""));
    assert_eq!(r["grade"]["w"], 1);
    assert_eq!(r["grade"]["d"], 0);
    let trace = r["trace"].as_array().expect("trace");
    let names: Vec<&str> = trace.iter().filter_map(|t| t["tool"].as_str()).collect();
    assert_eq!(names, ["echo", "add", "whereami"]);
    assert_eq!(trace[0]["args"], serde_json::json!(["hi"]));
    assert_eq!(trace[1]["args"], serde_json::json!([2, 3]));
    assert!(trace.iter().all(|t| t["ok"] == true));
}

/// Optional parameters of a server tool can be left out by keyword as well
/// as positionally; a required one cannot.
#[test]
fn optional_parameters_can_be_skipped_by_keyword() {
    let prog = "[window(text='a', tail=2), window('b'), window(text='c'), window('d', None, 5)]";
    let (ws, out, r) = run_fake("window", prog);
    assert_ran(&out, &r);
    assert_eq!(
        r["value"],
        serde_json::json!(["a|-|2", "b|-|-", "c|-|-", "d|-|5"])
    );
    let (_, r) = run(ws.path(), "window", "window(tail=2)");
    assert_eq!(r["ok"], false, "{r}");
    let msg = r["error"]["message"].as_str().unwrap_or("");
    assert!(msg.contains("missing required argument: 'text'"), "{r}");
}

#[test]
fn server_environment_is_restricted() {
    let ws = ws_with("[mcp_servers.fake.env]\nFAKE_TOKEN = \"abc\"\n");
    let mut c = util::lackpy();
    c.args([
        "run",
        "--json",
        "--tools",
        "whereami",
        "-c",
        "whereami()['env']",
    ])
    .arg("--workspace")
    .arg(ws.path())
    .env("LACKPY_SECRET_SHOULD_NOT_LEAK", "1");
    let out = c.output().expect("run lackpy");
    let r = util::json(&out);
    assert_eq!(r["ok"], true, "{r}");
    let env: Vec<&str> = r["value"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(env.contains(&"FAKE_TOKEN"), "{env:?}");
    assert!(!env.contains(&"LACKPY_SECRET_SHOULD_NOT_LEAK"), "{env:?}");
}

/// Run `probe(action, target)` in the fake server of `ws`: (ok, error text).
fn probe(ws: &Path, action: &str, target: &str) -> (bool, String) {
    let prog = format!("probe({action:?}, {target:?})");
    let (out, r) = run(ws, "probe", &prog);
    assert_ran(&out, &r);
    (
        r["value"]["ok"] == true,
        r["value"]["error"].as_str().unwrap_or_default().to_string(),
    )
}

/// A real escape attempt from a configured server, with the default jail:
/// it reads the workspace but cannot write it, cannot read a file outside
/// it (a sibling directory, `/etc/shadow`), has no network, and is pid 1 of
/// its own pid namespace.
#[test]
fn server_is_jailed_by_default() {
    let ws = ws_with("");
    let outside = tempfile::tempdir().expect("tempdir");
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "s3cret").expect("write secret");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port().to_string();

    assert_eq!(probe(ws.path(), "read", "hello.txt"), (true, String::new()));
    let (ok, err) = probe(ws.path(), "write", "hello.txt");
    assert!(!ok && err.contains("PermissionError"), "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("hello.txt"))
            .ok()
            .as_deref(),
        Some("hi there")
    );
    let (ok, err) = probe(ws.path(), "write", "new.txt");
    assert!(!ok, "{err}");
    assert!(!ws.path().join("new.txt").exists());
    for target in [
        secret.to_str().unwrap_or_default(),
        "/etc/shadow",
        "/root/.bashrc",
    ] {
        let (ok, err) = probe(ws.path(), "read", target);
        assert!(!ok, "{target} was readable");
        assert!(
            err.contains("PermissionError") || err.contains("FileNotFoundError"),
            "{target}: {err}"
        );
    }
    let (ok, err) = probe(ws.path(), "connect", &port);
    assert!(!ok, "connected to the host's loopback: {err}");

    let (out, r) = run(ws.path(), "whereami", "whereami()['pid']");
    assert_eq!(
        r["value"],
        1,
        "{r} {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A workspace named in the server's arguments (as `mcp-server-filesystem
/// .` is configured) is readable by it, never executable: a program may
/// have written the files there.
#[test]
fn workspace_named_in_args_is_not_executable() {
    assert!(util::have_python(), "python3 is required for this test");
    let cfg = format!(
        "[mcp_servers.fake]\ncommand = \"python3\"\nargs = [{:?}, \".\"]\n",
        fixture().display().to_string()
    );
    let ws = util::workspace(&[
        (".lackpy/config.toml", &cfg),
        ("run.sh", "#!/bin/sh\nexit 0\n"),
    ]);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        ws.path().join("run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    assert_eq!(probe(ws.path(), "read", "run.sh"), (true, String::new()));
    let (ok, err) = probe(ws.path(), "exec", "./run.sh");
    assert!(!ok && err.contains("PermissionError"), "{err}");
    // The same script outside the workspace, named by `read_paths`, runs.
    let outside = tempfile::tempdir().expect("tempdir");
    let script = outside.path().join("run.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 0\n").expect("write");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let cfg = format!(
        "[mcp_servers.fake]\ncommand = \"python3\"\nargs = [{:?}]\nread_paths = [{:?}]\n",
        fixture().display().to_string(),
        outside.path().display().to_string()
    );
    std::fs::write(ws.path().join(".lackpy/config.toml"), cfg).expect("config");
    assert_eq!(
        probe(ws.path(), "exec", script.to_str().unwrap_or_default()),
        (true, String::new())
    );
}

/// The table's jail keys open exactly what they name: `workspace =
/// "write"`, `read_paths`, `network = true`.
#[test]
fn server_jail_follows_its_table() {
    assert!(util::have_python(), "python3 is required for this test");
    let outside = tempfile::tempdir().expect("tempdir");
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "s3cret").expect("write secret");
    let ws = ws_with(&format!(
        "workspace = \"write\"\nnetwork = true\nread_paths = [{:?}]\n",
        outside.path().display().to_string()
    ));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port().to_string();
    assert_eq!(probe(ws.path(), "write", "new.txt"), (true, String::new()));
    assert_eq!(
        std::fs::read_to_string(ws.path().join("new.txt"))
            .ok()
            .as_deref(),
        Some("written by the server")
    );
    assert_eq!(
        probe(ws.path(), "read", secret.to_str().unwrap_or_default()),
        (true, String::new())
    );
    // Read-only there: `read_paths` grants no write.
    let (ok, _) = probe(ws.path(), "write", secret.to_str().unwrap_or_default());
    assert!(!ok);
    assert_eq!(probe(ws.path(), "connect", &port), (true, String::new()));
}

/// An MCP server built with rmcp as a tool source: `lackpy mcp` itself,
/// started jailed by the outer lackpy. A program calls its `validate` tool.
/// (The inner server's own attempt to start the same table again is
/// refused by its jail, so the configuration cannot recurse.)
#[test]
fn rmcp_server_as_a_tool_source() {
    let cfg = format!(
        "[mcp_servers.inner]\ncommand = {:?}\nargs = [\"mcp\"]\n",
        util::bin().display().to_string()
    );
    let ws = util::workspace(&[(".lackpy/config.toml", &cfg)]);
    let (_, v) = tools_json(ws.path());
    let t = tool(&v, "validate").expect("validate discovered");
    assert_eq!(grade_of(t), (1, 0), "read-only by its annotations: {t}");
    let (out, r) = run(
        ws.path(),
        "validate",
        "v = validate(\"x = read_file('a')\\nx\")\n[v['ok'], v['calls']]",
    );
    assert_eq!(
        r["value"],
        serde_json::json!([true, ["read_file"]]),
        "{r} {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A server installed in a virtual environment outside the workspace (a
/// `#!` script whose interpreter links to a Python installed elsewhere)
/// starts in its jail: the jail follows the `#!` chain.
#[test]
fn server_in_a_virtualenv_runs_jailed() {
    assert!(util::have_python(), "python3 is required for this test");
    let d = tempfile::tempdir().expect("tempdir");
    let venv = d.path().join("venv");
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .output()
        .expect("python3 -m venv");
    if !made.status.success() {
        util::skip(
            "mcp_source::server_in_a_virtualenv_runs_jailed",
            &format!(
                "python3 -m venv failed: {}",
                String::from_utf8_lossy(&made.stderr).trim()
            ),
        );
        return;
    }
    let server = venv.join("bin/fake-server");
    let body = std::fs::read_to_string(fixture()).expect("fixture");
    let body = body.replacen(
        "#!/usr/bin/env python3",
        &format!("#!{}", venv.join("bin/python").display()),
        1,
    );
    std::fs::write(&server, body).expect("write server");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let cfg = format!(
        "[mcp_servers.venv]\ncommand = {:?}\n",
        server.display().to_string()
    );
    let ws = util::workspace(&[(".lackpy/config.toml", &cfg)]);
    let (out, r) = run(ws.path(), "echo", "echo(text='from the venv')");
    assert_eq!(
        r["value"],
        "from the venv",
        "{r} {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `lackpy doctor` shows each server's jail and whether it starts in it.
#[test]
fn doctor_reports_server_jails() {
    let extra = "[mcp_servers.missing]\ncommand = \"/nonexistent/lackpy-no-such-server\"\n";
    let ws = ws_with(extra);
    let out = util::run_with_stdin(
        &[
            "doctor",
            "--json",
            "--workspace",
            ws.path().to_str().unwrap_or("."),
        ],
        "",
        None,
    );
    let v = util::json(&out);
    let servers = v["mcp_servers"].as_array().cloned().unwrap_or_default();
    let by = |n: &str| {
        servers
            .iter()
            .find(|s| s["name"] == n)
            .cloned()
            .unwrap_or_default()
    };
    let fake = by("fake");
    assert!(fake["tools"].as_u64().is_some_and(|n| n >= 10), "{fake}");
    assert!(
        fake["jail"]
            .as_str()
            .is_some_and(|j| j.contains("no network")),
        "{fake}"
    );
    let missing = by("missing");
    assert!(missing["tools"].is_null(), "{missing}");
    // A program that does not exist is said to be missing (not blamed on
    // the jail), and doctor fails for it.
    assert!(
        missing["error"]
            .as_str()
            .is_some_and(|e| e.contains("does not exist") && !e.contains("jail")),
        "{missing}"
    );
    assert_eq!(v["ok"], false, "{v}");
    assert_ne!(out.status.code(), Some(0));
}

/// A misspelt jail key value is a config error naming the key, not a
/// server silently run with other rights.
#[test]
fn bad_jail_keys_are_config_errors() {
    let ws = ws_with("workspace = \"rw\"\n");
    let out = util::run_with_stdin(
        &["run", "--workspace", ws.path().to_str().unwrap_or("."), "-"],
        "1",
        None,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("mcp_servers.fake.workspace"), "{err}");
}

#[test]
fn is_error_result_is_a_tool_failure() {
    let (_ws, out, r) = run_fake("fail", "fail()");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(r["error"]["kind"], "tool", "{r}");
    assert_eq!(r["error"]["type"], "ToolFailed");
    assert!(r["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("it went wrong")));
    assert_eq!(r["trace"][0]["ok"], false);
}

#[test]
fn broken_server_is_skipped_with_a_warning() {
    assert!(util::have_python(), "python3 is required for this test");
    let extra = format!(
        "[mcp_servers.broken]\ncommand = \"python3\"\nargs = [{:?}, \"--exit-at-start\"]\n\n\
         [mcp_servers.missing]\ncommand = \"/nonexistent/lackpy-no-such-server\"\n",
        fixture().display().to_string()
    );
    let ws = ws_with(&extra);
    let (out, r) = run(
        ws.path(),
        "echo,read_file",
        "[echo('a'), read_file('hello.txt')]",
    );
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["value"], serde_json::json!(["a", "hi there"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mcp server broken"), "{err}");
    assert!(err.contains("mcp server missing"), "{err}");
}

#[test]
fn hanging_call_times_out_within_the_bound() {
    let ws = ws_with("");
    let t0 = Instant::now();
    let (out, r) = run(
        ws.path(),
        "hang,echo",
        "echo('before')\nhang()\necho('after')",
    );
    let took = t0.elapsed();
    // timeout_seconds = 2 in the config.
    assert!(took < Duration::from_secs(8), "took {took:?}");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(r["error"]["kind"], "tool", "{r}");
    assert_eq!(r["error"]["type"], "Timeout", "{r}");
    let trace = r["trace"].as_array().expect("trace");
    assert_eq!(trace.len(), 2, "{r}");
    assert_eq!(trace[1]["ok"], false);
    assert!(trace[1]["error"]
        .as_str()
        .is_some_and(|e| e.starts_with("Timeout")));
}

#[test]
fn server_dying_mid_call_is_a_tool_failure() {
    let (_ws, out, r) = run_fake("crash", "crash()");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(r["error"]["type"], "ToolFailed", "{r}");
    assert!(r["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("died")));
}

#[test]
fn unknown_mcp_tool_is_a_validation_error() {
    let ws = ws_with("");
    let out = util::run_json(ws.path(), "nosuch", "1");
    assert_eq!(out.status.code(), Some(3));
}

/// The published filesystem server, when it is already installed
/// (`npm i -g @modelcontextprotocol/server-filesystem`); never downloaded here.
#[test]
fn published_filesystem_server_when_installed() {
    let Some(bin) = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("mcp-server-filesystem"))
            .find(|p| p.is_file())
    }) else {
        util::skip(
            "mcp_source::published_filesystem_server_when_installed",
            "mcp-server-filesystem is not installed (npm i -g @modelcontextprotocol/server-filesystem)",
        );
        return;
    };
    let ws = util::workspace(&[("notes/a.txt", "alpha")]);
    let root = ws.path().canonicalize().expect("canonical ws");
    let cfg = format!(
        "[mcp_servers.fs]\ncommand = {:?}\nargs = [{:?}]\n",
        bin.display().to_string(),
        root.display().to_string()
    );
    std::fs::write(ws.path().join(".lackpy/config.toml"), "").ok();
    std::fs::create_dir_all(ws.path().join(".lackpy")).expect("mkdir");
    std::fs::write(ws.path().join(".lackpy/config.toml"), cfg).expect("config");
    let (_, v) = tools_json(ws.path());
    // `read_file` is a builtin and wins the bare name; `read_text_file` is the server's.
    let t = tool(&v, "read_text_file").expect("read_text_file discovered");
    assert_eq!(grade_of(t).1, 0, "read-only: {t}");
    let path = root.join("notes/a.txt");
    let prog = format!("read_text_file({:?})", path.display().to_string());
    let (out, r) = run(ws.path(), "read_text_file", &prog);
    assert_ran(&out, &r);
    assert!(r["value"].to_string().contains("alpha"), "{r}");
}

/// `lackpy mcp` (a long-running front end) discovers the servers of its
/// workspace and runs programs that call their tools; calls reuse the
/// server, and one that hung is replaced for the next call.
#[tokio::test]
async fn lackpy_mcp_front_end_uses_discovered_tools() {
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::TokioChildProcess;
    use rmcp::ServiceExt;
    let ws = ws_with("");
    let mut cmd = tokio::process::Command::new(util::bin());
    cmd.arg("mcp").arg("--workspace").arg(ws.path());
    cmd.env_remove("LACKPY_CONFIG").env_remove("LACKPY_LOG");
    cmd.env("XDG_CONFIG_HOME", "/nonexistent-lackpy-test-config");
    let transport = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn lackpy mcp")
        .0;
    let c = ().serve(transport).await.expect("MCP initialize");
    let run = |program: &str, tools: &[&str]| {
        let mut args = serde_json::Map::new();
        args.insert("program".into(), Value::from(program));
        args.insert("tools".into(), serde_json::json!(tools));
        CallToolRequestParams::new("run_program").with_arguments(args)
    };
    for _ in 0..2 {
        let r = c
            .call_tool(run("add(20, 22)['sum']", &["add"]))
            .await
            .expect("tools/call");
        let sc = r.structured_content.expect("structuredContent");
        assert_eq!(sc["ok"], true, "{sc}");
        assert_eq!(sc["value"], 42);
    }
    let r = c
        .call_tool(run("hang()", &["hang"]))
        .await
        .expect("tools/call");
    assert_eq!(r.is_error, Some(true));
    let sc = r.structured_content.expect("structuredContent");
    assert_eq!(sc["error"]["type"], "Timeout", "{sc}");
    let r = c
        .call_tool(run("echo('again')", &["echo"]))
        .await
        .expect("tools/call");
    let sc = r.structured_content.expect("structuredContent");
    assert_eq!(sc["value"], "again", "{sc}");
    c.cancel().await.expect("close");
}
