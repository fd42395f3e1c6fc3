//! `lackpy mcp` driven as a child process by rmcp's client, the way an MCP
//! host runs it.

pub(crate) use crate::mcp_util::text;
use crate::mcp_util::{args, listed, timed};
use crate::util;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Start `lackpy mcp --workspace <ws> EXTRA...` (clean environment, stderr
/// dropped) as a child on stdio.
pub(crate) fn spawn_server(ws: &std::path::Path, extra: &[&str]) -> TokioChildProcess {
    let mut cmd = util::lackpy();
    cmd.arg("mcp").arg("--workspace").arg(ws).args(extra);
    TokioChildProcess::builder(tokio::process::Command::from(cmd))
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn lackpy mcp")
        .0
}

/// Start `lackpy mcp --workspace <ws>` and complete the MCP handshake.
pub(crate) async fn connect(
    ws: &std::path::Path,
    extra: &[&str],
) -> RunningService<RoleClient, ()> {
    ().serve(spawn_server(ws, extra))
        .await
        .expect("MCP initialize")
}

pub(crate) async fn call(
    c: &RunningService<RoleClient, ()>,
    name: &'static str,
    a: Value,
) -> CallToolResult {
    c.call_tool(CallToolRequestParams::new(name).with_arguments(args(a)))
        .await
        .expect("tools/call")
}

/// `lackpy mcp` on an empty workspace (kept alive by the first value).
async fn serve_empty() -> (tempfile::TempDir, RunningService<RoleClient, ()>) {
    let ws = util::workspace(&[]);
    let c = connect(ws.path(), &[]).await;
    (ws, c)
}

/// `call`, which must succeed.
async fn call_ok(
    c: &RunningService<RoleClient, ()>,
    name: &'static str,
    a: Value,
) -> CallToolResult {
    let r = call(c, name, a).await;
    assert_eq!(r.is_error, Some(false), "{name}: {}", text(&r));
    r
}

/// The `name` of each object in the array `v`.
fn names_in(v: &Value) -> Vec<&str> {
    let items = v.as_array().into_iter().flatten();
    items.filter_map(|t| t["name"].as_str()).collect()
}

fn sc(r: &CallToolResult) -> &Value {
    r.structured_content.as_ref().expect("structuredContent")
}

#[tokio::test]
async fn initialize_and_list_tools() {
    let (_ws, c) = serve_empty().await;
    let info = c.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|s| s.name.as_str()),
        Some("lackpy")
    );
    assert!(info.capabilities.tools.is_some());
    let tools = c.list_all_tools().await.expect("tools/list");
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "confirm_result",
            "delegate",
            "describe_tool",
            "docs_index",
            "list_profiles",
            "list_tools",
            "resolve_doc",
            "run_program",
            "search_tools",
            "traces",
            "validate"
        ]
    );
    for t in &tools {
        assert_eq!(
            t.input_schema.get("type"),
            Some(&json!("object")),
            "{}",
            t.name
        );
        assert!(t.annotations.is_some(), "{} has no annotations", t.name);
    }
    let run = listed(&tools, "run_program");
    assert_eq!(run.input_schema.get("required"), Some(&json!(["program"])));
    let props = run
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .expect("properties");
    for p in ["program", "profile", "tools", "session"] {
        assert!(props.contains_key(p), "run_program lacks {p}");
    }
    let v = listed(&tools, "validate");
    let read_only = v.annotations.as_ref().and_then(|a| a.read_only_hint);
    assert_eq!(read_only, Some(true));
    c.cancel().await.expect("close");
}

#[tokio::test]
async fn validate_ok_and_invalid() {
    let (_ws, c) = serve_empty().await;
    let ok = call_ok(
        &c,
        "validate",
        json!({"program": "x = read_file('a.txt')\nlen(x)"}),
    )
    .await;
    let s = sc(&ok);
    assert_eq!(s["ok"], json!(true));
    for k in ["grade", "calls", "error"] {
        assert!(s.get(k).is_some(), "missing {k}: {s}");
    }
    let bad = call(&c, "validate", json!({"program": "x = (\n"})).await;
    assert_eq!(bad.is_error, Some(true));
    assert_eq!(sc(&bad)["ok"], json!(false));
    assert_eq!(sc(&bad)["error"]["kind"], json!("validation"));
    assert!(text(&bad).contains("validation"), "{}", text(&bad));
    c.cancel().await.expect("close");
}

#[tokio::test]
async fn profiles_and_tools_discovery() {
    let (_ws, c) = serve_empty().await;
    let p = call_ok(&c, "list_profiles", json!({})).await;
    assert!(
        sc(&p)["profiles"].as_array().is_some_and(|a| !a.is_empty()),
        "{}",
        sc(&p)
    );
    let t = call_ok(&c, "list_tools", json!({})).await;
    let names = names_in(&sc(&t)["tools"]);
    assert!(
        names.contains(&"read_file") && names.contains(&"find_files"),
        "{names:?}"
    );
    let unknown = call(&c, "list_tools", json!({"profile": "no-such-profile"})).await;
    assert_eq!(unknown.is_error, Some(true));
    let s = call(&c, "search_tools", json!({"query": "read file"})).await;
    assert_eq!(
        sc(&s)["matches"][0]["name"],
        json!("read_file"),
        "{}",
        sc(&s)
    );
    let d = call(&c, "describe_tool", json!({"name": "read_file"})).await;
    assert!(
        sc(&d)["tool"]["signature"]
            .as_str()
            .is_some_and(|s| s.starts_with("read_file(")),
        "{}",
        sc(&d)
    );
    // delegate answers with a structured result whatever the inference
    // providers manage (no model is reachable in tests; rules may match).
    let dg = call(&c, "delegate", json!({"intent": "count the files"})).await;
    let ok = sc(&dg)["ok"].as_bool().expect("ok");
    assert_eq!(dg.is_error, Some(!ok), "{}", text(&dg));
    c.cancel().await.expect("close");
}

#[tokio::test]
async fn unknown_tool_is_a_protocol_error_and_server_survives() {
    let (_ws, c) = serve_empty().await;
    let e = c.call_tool(CallToolRequestParams::new("rm_rf")).await;
    assert!(e.is_err(), "{e:?}");
    let bad = call(&c, "run_program", json!({"source": "1"})).await;
    assert_eq!(bad.is_error, Some(true));
    assert_eq!(sc(&bad)["error"]["type"], json!("BadArgument"));
    let ok = call(&c, "list_profiles", json!({})).await;
    assert_eq!(ok.is_error, Some(false));
    c.cancel().await.expect("close");
}

#[tokio::test]
async fn run_program_ok_and_failing() {
    let ws = util::workspace(&[("a.txt", "hello\nworld\n")]);
    let c = connect(ws.path(), &[]).await;
    let ok = call(
        &c,
        "run_program",
        json!({"program": "lines = read_file('a.txt').splitlines()\nprint(len(lines))\nlines"}),
    )
    .await;
    assert_eq!(ok.is_error, Some(false), "{}", text(&ok));
    let s = sc(&ok);
    assert_eq!(s["ok"], json!(true));
    assert_eq!(s["value"], json!(["hello", "world"]));
    assert_eq!(s["repr"], json!("['hello', 'world']"));
    assert_eq!(s["stdout"], json!("2\n"));
    assert_eq!(s["trace"][0]["tool"], json!("read_file"));
    assert_eq!(s["error"], Value::Null);

    let bad = call(&c, "run_program", json!({"program": "x = 1\ny = x + z\n"})).await;
    assert_eq!(bad.is_error, Some(true));
    assert_eq!(sc(&bad)["ok"], json!(false));
    assert_eq!(sc(&bad)["error"]["kind"], json!("validation"));

    let boom = call(&c, "run_program", json!({"program": "d = {}\nd['k']"})).await;
    assert_eq!(boom.is_error, Some(true));
    assert_eq!(sc(&boom)["error"]["kind"], json!("runtime"));
    assert_eq!(sc(&boom)["error"]["type"], json!("KeyError"));
    assert_eq!(sc(&boom)["error"]["line"], json!(2));
    c.cancel().await.expect("close");
}

/// A program's value nested as deep as the boundary allows (100 lists)
/// reaches rmcp's client whole; one level deeper is the run's `depth`
/// limit. Before, values up to 200 levels were sent, and anything past
/// ~124 (serde_json's 128 with the JSON-RPC envelope) was dropped by the
/// client's parser: the call never returned.
#[tokio::test]
async fn deep_results_reach_an_rmcp_client_or_fail_clearly() {
    let (_ws, c) = serve_empty().await;
    let nested = |n: usize| format!("x = 0\nfor i in range({n}):\n    x = [x]\nx");
    let deepest = tokio::time::timeout(
        Duration::from_secs(20),
        call(&c, "run_program", json!({ "program": nested(100) })),
    )
    .await
    .expect("the answer to a 100-deep value reached the client");
    assert_eq!(deepest.is_error, Some(false), "{}", text(&deepest));
    let mut v = &sc(&deepest)["value"];
    let mut levels = 0;
    while let Some(inner) = v.as_array().and_then(|a| a.first()) {
        v = inner;
        levels += 1;
    }
    assert_eq!((levels, v), (100, &json!(0)));
    for n in [101, 150, 300] {
        let deeper = tokio::time::timeout(
            Duration::from_secs(20),
            call(&c, "run_program", json!({ "program": nested(n) })),
        )
        .await
        .unwrap_or_else(|_| panic!("the answer for {n} levels reached the client"));
        assert_eq!(deeper.is_error, Some(true), "{}", text(&deeper));
        let e = &sc(&deeper)["error"];
        assert_eq!(
            (&e["kind"], &e["type"]),
            (&json!("limit"), &json!("depth")),
            "{e}"
        );
        let msg = e["message"].as_str().unwrap_or("");
        assert!(msg.contains("deeper than 100 levels"), "{msg}");
    }
    c.cancel().await.expect("close");
}

#[tokio::test]
async fn concurrent_runs_and_a_runaway() {
    let (_ws, c) = serve_empty().await;
    let runaway = call(
        &c,
        "run_program",
        json!({"program": "n = 0\nfor i in range(1000000000000):\n    n += 1\nn"}),
    );
    let quick = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        timed(call(
            &c,
            "run_program",
            json!({"program": "sum(range(10))"}),
        ))
        .await
    };
    tokio::select! {
        r = runaway => panic!("runaway finished first: {}", text(&r)),
        (r, took) = quick => {
            assert_eq!(sc(&r)["value"], json!(45));
            assert!(took < Duration::from_secs(2), "{took:?}");
        }
    }
    c.cancel().await.expect("close");
}

/// `lackpy mcp --workspace WS` with `env` set, spoken to as raw JSON-RPC
/// lines on its stdin and stdout (stderr dropped).
fn raw_server(
    ws: &std::path::Path,
    env: &[(&str, &str)],
) -> (
    std::process::Child,
    std::process::ChildStdin,
    std::process::ChildStdout,
) {
    let mut cmd = util::lackpy();
    cmd.arg("mcp").arg("--workspace").arg(ws);
    cmd.envs(env.iter().copied());
    let io = [Stdio::piped(), Stdio::piped(), Stdio::null()];
    let mut child = util::spawn(&mut cmd, io, "lackpy mcp");
    let stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    (child, stdin, stdout)
}

/// The client's first frame: `initialize` with id 1.
fn initialize_frame() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
}

/// A `lackpy mcp` process, killed however the test ends (a failed
/// assertion must not leave it running).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// [`raw_server`] past the handshake (`initialize` answered,
/// `notifications/initialized` sent): the server, its stdin, its stdout.
fn initialized_server(
    ws: &std::path::Path,
) -> (
    Killed,
    std::process::ChildStdin,
    BufReader<std::process::ChildStdout>,
) {
    let (child, mut stdin, stdout) = raw_server(ws, &[]);
    let child = Killed(child);
    let mut out = BufReader::new(stdout);
    writeln!(stdin, "{}", initialize_frame()).expect("write");
    stdin.flush().expect("flush");
    let mut first = String::new();
    out.read_line(&mut first).expect("initialize reply");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    writeln!(stdin, "{initialized}").expect("write");
    stdin.flush().expect("flush");
    (child, stdin, out)
}

/// Raw JSON-RPC over pipes: every stdout line must be a JSON-RPC frame, and
/// closing stdin must end the process within a second.
#[test]
fn eof_shuts_down_quickly_and_stdout_is_only_frames() {
    let ws = util::workspace(&[]);
    let (mut child, mut stdin, stdout) = raw_server(ws.path(), &[("LACKPY_LOG", "debug")]);
    let frames = [
        initialize_frame(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "validate", "arguments": {"program": "len('x')"}}}),
    ];
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stdout).lines() {
            match line {
                Ok(l) => lines.push(l),
                Err(_) => break,
            }
        }
        lines
    });
    for f in &frames {
        writeln!(stdin, "{f}").expect("write frame");
    }
    stdin.flush().expect("flush");
    // Let the answers come back before closing.
    std::thread::sleep(Duration::from_millis(500));
    let t = Instant::now();
    drop(stdin);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if t.elapsed() > Duration::from_secs(3) {
            let _ = child.kill();
            panic!("lackpy mcp did not exit after EOF");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = t.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(took < Duration::from_secs(1), "exit took {took:?}");
    let lines = reader.join().expect("reader");
    let mut ids = Vec::new();
    for l in &lines {
        let v: Value =
            serde_json::from_str(l).unwrap_or_else(|e| panic!("non-JSON on stdout ({e}): {l:?}"));
        assert_eq!(v["jsonrpc"], json!("2.0"), "{l}");
        ids.push(v["id"].clone());
    }
    ids.sort_by_key(|v| v.as_u64());
    assert_eq!(ids, [json!(1), json!(2), json!(3)], "{lines:?}");
}

#[tokio::test]
async fn config_profiles_sessions_and_traces() {
    let config = "[profiles.edit]\ntools = [\"read_file\", \"write_file\"]\ndescription = \"read and write\"\n";
    let ws = util::workspace(&[(".lackpy/config.toml", config), ("a.txt", "abc")]);
    let c = connect(ws.path(), &[]).await;
    let tools = c.list_all_tools().await.expect("tools/list");
    let run = listed(&tools, "run_program");
    // write_file is in the toolbox: running programs is not read-only.
    assert_eq!(
        run.annotations.as_ref().and_then(|a| a.read_only_hint),
        Some(false)
    );

    let p = call(&c, "list_profiles", json!({})).await;
    let names = names_in(&sc(&p)["profiles"]);
    assert!(names.contains(&"edit"), "{}", sc(&p));

    let w = call(
        &c,
        "run_program",
        json!({"program": "write_file('out.txt', read_file('a.txt').upper())", "profile": "edit"}),
    )
    .await;
    assert_eq!(w.is_error, Some(false), "{}", text(&w));
    assert_eq!(
        std::fs::read_to_string(ws.path().join("out.txt")).expect("out.txt"),
        "ABC"
    );
    // The default profile cannot write.
    let denied = call(
        &c,
        "run_program",
        json!({"program": "write_file('x.txt', 'no')"}),
    )
    .await;
    assert_eq!(denied.is_error, Some(true));
    assert_eq!(sc(&denied)["error"]["kind"], json!("validation"));
    // An ad-hoc tool list works too; an unknown tool is a clear error.
    let t = call(
        &c,
        "run_program",
        json!({"program": "len(find_files('*.txt'))", "tools": ["find_files"]}),
    )
    .await;
    assert_eq!(sc(&t)["value"], json!(2), "{}", text(&t));
    let u = call(
        &c,
        "run_program",
        json!({"program": "1", "tools": ["launch_missiles"]}),
    )
    .await;
    assert_eq!(u.is_error, Some(true));
    assert_eq!(sc(&u)["error"]["type"], json!("UnknownTool"));

    // A session id is accepted and reported.
    let s = call_ok(
        &c,
        "run_program",
        json!({"program": "x = 1\nx", "session": "nb1"}),
    )
    .await;
    assert_eq!(sc(&s)["session"]["id"], json!("nb1"));

    // Traces may be written in the background: wait for the newest run.
    let t = Instant::now();
    loop {
        let tr = call(&c, "traces", json!({"limit": 2})).await;
        let traces = sc(&tr)["traces"].as_array().cloned().unwrap_or_default();
        assert!(traces.len() <= 2, "{}", sc(&tr));
        let newest_seen = traces
            .iter()
            .any(|r| r["program"].as_str().is_some_and(|p| p.contains("x = 1")));
        if newest_seen && traces.len() == 2 {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "trace of the last run missing: {}",
            sc(&tr)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let d = call_ok(
        &c,
        "resolve_doc",
        json!({"path": "docs/tools/read_file.md"}),
    )
    .await;
    assert!(sc(&d)["text"]
        .as_str()
        .is_some_and(|t| t.contains("read_file(")));
    let bad = call(&c, "resolve_doc", json!({"path": "../../etc/passwd"})).await;
    assert_eq!(bad.is_error, Some(true));
    c.cancel().await.expect("close");
}

/// EOF while a runaway program is running still ends the server within a
/// second (the worker dies with it).
#[test]
fn eof_with_a_run_in_flight_exits_quickly() {
    let ws = util::workspace(&[]);
    let (mut child, mut stdin, stdout) = raw_server(ws.path(), &[]);
    let mut lines = BufReader::new(stdout).lines();
    writeln!(stdin, "{}", initialize_frame()).expect("write");
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    assert!(first.contains("\"id\":1"), "{first}");
    let runaway = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "run_program",
        "arguments": {"program": "n = 0\nfor i in range(1000000000000):\n    n += 1\nn"}}});
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .expect("write");
    writeln!(stdin, "{runaway}").expect("write");
    stdin.flush().expect("flush");
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    drop(stdin);
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if t.elapsed() > Duration::from_secs(5) {
            let _ = child.kill();
            panic!("lackpy mcp did not exit after EOF with a run in flight");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "exit took {:?}",
        t.elapsed()
    );
}

/// Node's `child_process` (hence every TypeScript SDK client) hands the
/// server sockets, not pipes, as stdin and stdout: the server reads and
/// writes them through the reactor. A request written in pieces, answers
/// that outgrow the socket buffer, and shutting the socket's write side
/// (EOF) all behave as over pipes.
#[test]
fn stdio_over_sockets_like_node_clients() {
    use std::os::unix::net::UnixStream;
    let ws = util::workspace(&[]);
    let (ours_in, theirs_in) = UnixStream::pair().expect("socketpair");
    let (ours_out, theirs_out) = UnixStream::pair().expect("socketpair");
    let mut cmd = util::lackpy();
    cmd.arg("mcp").arg("--workspace").arg(ws.path());
    let io = [
        Stdio::from(std::os::fd::OwnedFd::from(theirs_in)),
        Stdio::from(std::os::fd::OwnedFd::from(theirs_out)),
        Stdio::null(),
    ];
    let mut child = util::spawn(&mut cmd, io, "lackpy mcp");
    let mut stdin = ours_in;
    let mut lines = BufReader::new(ours_out).lines();
    // The first frame in two writes, split inside the JSON.
    let init = format!("{}\n", initialize_frame());
    let (a, b) = init.split_at(init.len() / 2);
    stdin.write_all(a.as_bytes()).expect("write");
    stdin.flush().expect("flush");
    std::thread::sleep(Duration::from_millis(50));
    stdin.write_all(b.as_bytes()).expect("write");
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    assert!(first.contains("\"id\":1"), "{first}");
    // 64 listings (~8 KB each) asked for before reading any: more than the
    // socket buffer holds, so the server's writes must wait for room. The
    // requests go in one write: as 130 small writes, each a socket buffer
    // of its own (~1 KiB charged apiece), they could fill the test's send
    // buffer while the server, its output full, reads no more — both sides
    // then wait on each other (seen: 1 run in 6 hung until the stall limit).
    let mut frames = format!(
        "{}\n",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    );
    for id in 100..164 {
        frames.push_str(&format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})
        ));
    }
    let run = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "run_program", "arguments": {"program": "6 * 7"}}});
    frames.push_str(&format!("{run}\n"));
    stdin.write_all(frames.as_bytes()).expect("write frames");
    let mut answers = std::collections::BTreeMap::new();
    while answers.len() < 65 {
        let line = match lines.next() {
            Some(Ok(l)) => l,
            other => panic!("stream ended early: {other:?}"),
        };
        let v: Value = serde_json::from_str(&line).expect("JSON frame");
        answers.insert(v["id"].as_u64().unwrap_or(0), v);
    }
    for id in 100..164 {
        let tools = answers[&id]["result"]["tools"]
            .as_array()
            .map_or(0, Vec::len);
        assert!(tools > 3, "listing {id}: {}", answers[&id]);
    }
    assert!(
        answers[&3]["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("42")),
        "{}",
        answers[&3]
    );
    let t = Instant::now();
    stdin.shutdown(std::net::Shutdown::Write).expect("shutdown");
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            assert!(s.success(), "{s:?}");
            break;
        }
        if t.elapsed() > Duration::from_secs(3) {
            let _ = child.kill();
            panic!("lackpy mcp did not exit after EOF on its socket");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Closing stdin before initializing is a clean end; a bad workspace is a
/// usage error (exit 3); neither writes to stdout.
#[test]
fn immediate_eof_and_bad_workspace() {
    let ws = util::workspace(&[]);
    let t = Instant::now();
    let out = util::run_with_stdin(
        &["mcp", "--workspace", &ws.path().display().to_string()],
        "",
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    let missing = ws.path().join("nope");
    let out = util::run_with_stdin(
        &["mcp", "--workspace", &missing.display().to_string()],
        "",
        None,
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(out.stdout.is_empty());
}

/// One line of program must not take the server down through a builtin
/// tool: a `**` chain that overflowed a runtime thread's stack (aborting
/// the whole server) and a quadratic bracket pattern are clean tool
/// errors, and the same server answers the next run.
#[tokio::test]
async fn hostile_find_files_leaves_the_server_serving() {
    let ws = util::workspace(&[("a.txt", "x")]);
    let c = connect(ws.path(), &[]).await;
    for program in [
        "find_files('**/' * 10000 + 'x')",
        "find_files('[' * 300000)",
        "find_files('**/' * 1300 + 'x')",
    ] {
        let t = Instant::now();
        let r = call(&c, "run_program", json!({"program": program})).await;
        assert_eq!(r.is_error, Some(true), "{program}: {}", text(&r));
        assert_eq!(sc(&r)["error"]["kind"], json!("tool"), "{}", sc(&r));
        assert_eq!(sc(&r)["error"]["type"], json!("BadArgument"), "{}", sc(&r));
        // Far below the run's 10 s wall clock (generous for a loaded machine).
        assert!(
            t.elapsed() < Duration::from_secs(8),
            "{program}: {:?}",
            t.elapsed()
        );
    }
    let ok = call_ok(&c, "run_program", json!({"program": "find_files('*.txt')"})).await;
    assert_eq!(sc(&ok)["value"], json!(["a.txt"]));
    c.cancel().await.expect("close");
}

/// Cancelling runs whose builtin tool is busy (code intelligence indexing
/// many files) frees their slots at once: the tool polls the run's cancel
/// flag. Before, the eight cancelled runs kept every slot until their
/// indexing ended, past their own wall-clock limit, and the next run waited.
#[test]
fn cancelled_code_intelligence_frees_its_slot() {
    // Forty distinct ~250 kB Python files: each call parses for many
    // seconds, eight of them far longer on two cores.
    let body = "def f(a, b=1):\n    return g(a)\n".repeat(8_000);
    let files: Vec<(String, String)> = (0..40)
        .map(|i| (format!("m{i}.py"), format!("# {i}\n{body}")))
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let ws = util::workspace(&refs);
    let mut mcp = util::McpLines::start(ws.path());
    let mut send = |v: Value| mcp.send(&v);
    // As many busy runs as the server runs at once (`MAX_IN_FLIGHT`).
    for id in 100..108 {
        send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "run_program",
            "arguments": {"program": "find_definitions('nowhere')", "tools": ["find_definitions"]}}}),
        );
    }
    // Let the calls reach the indexer, then cancel them all.
    std::thread::sleep(Duration::from_millis(1500));
    for id in 100..108 {
        send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "test"}}),
        );
    }
    let t = Instant::now();
    send(
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "run_program", "arguments": {"program": "sum(range(10))"}}}),
    );
    let answer = loop {
        let line = mcp
            .recv(Duration::from_secs(120).saturating_sub(t.elapsed()))
            .expect("no answer to the quick run");
        if line.contains("\"id\":7") {
            break line;
        }
    };
    let took = t.elapsed();
    drop(mcp);
    let v: Value = serde_json::from_str(&answer).expect("JSON-RPC frame");
    assert_eq!(v["result"]["structuredContent"]["value"], json!(45), "{v}");
    // Generous: the slots must free on the cancel, not when the cancelled
    // runs reach their 10 s wall clock (8.5 s from here).
    assert!(
        took < Duration::from_secs(5),
        "the quick run waited {took:?}"
    );
}

/// A client that pipelines requests and reads no reply cannot grow the
/// server: it reads requests only while it can answer them (src/mcp/flow.rs).
/// Before, 300,000 pipelined `tools/list` took it to 4.6 GiB in 30 s. And
/// nothing is lost: once the client reads, every request is answered.
#[test]
fn a_client_that_reads_no_reply_cannot_grow_the_server() {
    const N: u64 = 20_000;
    let ws = util::workspace(&[]);
    let (child, mut stdin, mut out) = initialized_server(ws.path());
    let before = crate::serve::vm_rss_kib(child.0.id());
    let writer = std::thread::spawn(move || {
        for id in 2..N + 2 {
            writeln!(
                stdin,
                "{}",
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})
            )?;
        }
        stdin.flush()?;
        Ok::<_, std::io::Error>(stdin)
    });
    // Unbounded, the server would hold ~15 KB per unanswered request here
    // (~300 MB); bounded, a pipe's worth of replies and a few requests.
    std::thread::sleep(Duration::from_secs(3));
    let during = crate::serve::vm_rss_kib(child.0.id());
    assert!(
        !writer.is_finished(),
        "the server read all {N} requests while no reply was read"
    );
    let mut seen = std::collections::HashSet::new();
    let mut line = String::new();
    while (seen.len() as u64) < N {
        line.clear();
        let n = out.read_line(&mut line).expect("read reply");
        assert!(n > 0, "the server closed after {} replies", seen.len());
        let v: Value = serde_json::from_str(&line).expect("a JSON-RPC frame");
        assert!(
            v["result"]["tools"].is_array(),
            "{}",
            &line[..line.len().min(300)]
        );
        seen.insert(v["id"].as_u64().expect("id"));
    }
    let stdin = writer
        .join()
        .expect("writer")
        .expect("all requests written");
    drop(stdin);
    drop(child);
    assert_eq!(seen.len() as u64, N);
    assert!(
        during < before + 100 * 1024,
        "server RSS grew from {before} KiB to {during} KiB with replies unread"
    );
}

/// A request line over 1 MiB is discarded as it arrives (rmcp's default
/// cap, 16 MiB, let one line of small JSON values take the server to
/// ~1 GiB while it parsed) and answered with an error naming the cap; the
/// session goes on.
#[test]
fn an_oversized_request_line_is_refused_and_the_session_goes_on() {
    let ws = util::workspace(&[]);
    let (child, mut stdin, mut out) = initialized_server(ws.path());
    let before = crate::serve::status_kib(child.0.id(), "VmHWM:");
    // 8 MiB of `0,`: parsed, this was ~1 GiB of the server's memory.
    let junk = format!("[{}0]", "0,".repeat(4 << 20));
    let frames = [
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"run_program","arguments":{{"program":"1 + 1","x":{junk}}}}}}}"#
        ),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "run_program", "arguments": {"program": "1 + 1"}}}).to_string(),
        // The TypeScript SDK writes the id last.
        format!(
            r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"run_program","arguments":{{"program":"1 + 1","x":{junk}}}}},"id":"ts-4"}}"#
        ),
    ];
    for f in &frames {
        writeln!(stdin, "{f}").expect("write frame");
    }
    stdin.flush().expect("flush");
    let replies = read_replies(&mut out, frames.len());
    let after = crate::serve::status_kib(child.0.id(), "VmHWM:");
    drop(stdin);
    drop(child);
    let by_id = |id: Value| reply_with(&replies, id);
    for id in [json!(2), json!("ts-4")] {
        let refused = by_id(id);
        assert_eq!(refused["error"]["code"], json!(-32601), "{refused}");
        let says = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(
            says.contains("request too large") && says.contains("1048576"),
            "{refused}"
        );
    }
    let ok = by_id(json!(3));
    assert_eq!(ok["id"], json!(3), "{ok}");
    assert_eq!(ok["result"]["structuredContent"]["value"], json!(2), "{ok}");
    assert!(
        after < before + 64 * 1024,
        "server peak RSS grew from {before} KiB to {after} KiB over one discarded line"
    );
}

/// A request line serde_json cannot parse gets an error reply with its id,
/// and the session goes on. rmcp skips such a line without a word, so the
/// client waited until its own timeout. The usual source: JavaScript's
/// `JSON.stringify` writes a lone surrogate as `"\ud800"`.
#[test]
fn a_request_line_that_is_not_json_is_answered_and_the_session_goes_on() {
    let ws = util::workspace(&[]);
    let (child, mut stdin, mut out) = initialized_server(ws.path());
    let frames = [
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_program","arguments":{"program":"'\ud800'"}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"run_program","arguments":{"program":"1 + 1",}},"id":"ts-3"}"#.to_string(),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "run_program", "arguments": {"program": "1 + 1"}}}).to_string(),
    ];
    for f in &frames {
        writeln!(stdin, "{f}").expect("write frame");
    }
    stdin.flush().expect("flush");
    let replies = read_replies(&mut out, frames.len());
    drop(stdin);
    drop(child);
    let by_id = |id: Value| reply_with(&replies, id);
    for id in [json!(2), json!("ts-3")] {
        let refused = by_id(id);
        let says = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(says.contains("not valid JSON"), "{refused}");
    }
    let ok = by_id(json!(4));
    assert_eq!(ok["result"]["structuredContent"]["value"], json!(2), "{ok}");
}

/// JSON that is not a request rmcp reads gets an error reply with its id
/// and the reason, and the session goes on. Before, rmcp skipped a line
/// with a number out of range (`1e400`) without a word, answered a request
/// without `"jsonrpc"` with an id-less `-32600`, and `tools/call` params of
/// the wrong shape with "method not found: tools/call".
#[test]
fn json_that_is_not_a_valid_request_is_answered_with_its_id() {
    let ws = util::workspace(&[]);
    let mut server = util::McpLines::start(ws.path());
    let frames = [
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_program","arguments":{"program":"1 + 1","x":1e400}}}"#,
        r#"{"id":"no-version","method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_program","arguments":"1 + 1"}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"run_program","arguments":{"program":"1 + 1"}}}"#,
    ];
    for f in &frames {
        server.send_line(f);
    }
    // Read with a deadline: before the fix, a line got no reply at all.
    let replies: Vec<Value> = (0..frames.len())
        .map_while(|_| server.recv(std::time::Duration::from_secs(30)))
        .filter_map(|l| serde_json::from_str(&l).ok())
        .collect();
    drop(server);
    let by_id = |id: Value| reply_with(&replies, id);
    for (id, reason) in [
        (json!(2), "number out of range"),
        (json!("no-version"), "not a valid JSON-RPC request"),
        (
            json!(3),
            "invalid params for tools/call: invalid type: string",
        ),
    ] {
        let refused = by_id(id);
        let says = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(says.contains(reason), "{refused}");
    }
    let ok = by_id(json!(4));
    assert_eq!(ok["result"]["structuredContent"]["value"], json!(2), "{ok}");
}

/// The next `n` lines the server writes, each a JSON-RPC frame.
fn read_replies(out: &mut BufReader<std::process::ChildStdout>, n: usize) -> Vec<Value> {
    let mut line = String::new();
    (0..n)
        .map(|_| {
            line.clear();
            out.read_line(&mut line).expect("read");
            serde_json::from_str::<Value>(&line).expect("a JSON-RPC frame")
        })
        .collect()
}

/// The reply whose id is `id` (the test fails without one).
fn reply_with(replies: &[Value], id: Value) -> &Value {
    replies
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no reply with id {id}: {replies:?}"))
}

/// Pids of live processes whose command line is exactly `argv`.
fn pids_running(argv: &[&str]) -> Vec<u32> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
        .filter(|p| std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c == want))
        .filter(|p| {
            // Not a zombie: a killed child its jail has not reaped yet.
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| !r.trim_start().starts_with('Z'))
            })
        })
        .collect()
}

/// `lackpy mcp` with a command tool `nap` (`sleep 24.75`) whose run is
/// under way: the server, its stdin, and whether the tool was seen running.
fn server_napping(ws: &std::path::Path, secs: &str) -> (Killed, std::process::ChildStdin, bool) {
    let (child, mut stdin, _out) = initialized_server(ws);
    let nap = json!({"jsonrpc": "2.0", "id": 100, "method": "tools/call", "params": {
        "name": "run_program", "arguments": {"program": "nap()", "tools": ["nap"]}}});
    writeln!(stdin, "{nap}").expect("write");
    stdin.flush().expect("flush");
    let t = Instant::now();
    while pids_running(&["sleep", secs]).is_empty() && t.elapsed() < Duration::from_secs(8) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = !pids_running(&["sleep", secs]).is_empty();
    (child, stdin, started)
}

/// A workspace whose command tool `nap` runs `sleep SECS` (each test its
/// own SECS, so tests running side by side do not see each other's).
fn nap_workspace(secs: &str) -> tempfile::TempDir {
    let cfg = format!(
        "[[tools]]\nname = \"nap\"\nprovider = \"command\"\nargv = [\"sleep\", \"{secs}\"]\ntimeout = 30\n"
    );
    util::workspace(&[(".lackpy/config.toml", cfg.as_str())])
}

/// Waits up to 4 s for every `sleep SECS` to end; the ones still running.
fn naps_left_after_4s(secs: &str) -> Vec<u32> {
    let t = Instant::now();
    while !pids_running(&["sleep", secs]).is_empty() && t.elapsed() < Duration::from_secs(4) {
        std::thread::sleep(Duration::from_millis(20));
    }
    pids_running(&["sleep", secs])
}

/// A supervisor killed in the middle of a command tool's call leaves no
/// tool running: the jail's outer process dies with the thread that
/// started it. (Before, it and the tool lived on, orphaned, until the tool
/// ended by itself, up to its timeout of an hour.)
#[test]
fn a_killed_server_leaves_no_command_tool_running() {
    let ws = nap_workspace("24.5");
    let (child, stdin, started) = server_napping(ws.path(), "24.5");
    drop(child);
    drop(stdin);
    let left = naps_left_after_4s("24.5");
    for p in &left {
        let _ = std::process::Command::new("kill")
            .args(["-9", &p.to_string()])
            .status();
    }
    assert!(started, "the command tool never started");
    assert!(
        left.is_empty(),
        "the command tool outlived its supervisor: {left:?}"
    );
}

/// Cancelling a run (`notifications/cancelled`) kills the command tool it
/// is waiting on at once, not when the run's 10 s wall clock ends (before,
/// command, python and MCP tools only watched the deadline).
#[test]
fn a_cancelled_run_kills_the_command_tool_it_waits_on() {
    let ws = nap_workspace("24.75");
    let (child, mut stdin, started) = server_napping(ws.path(), "24.75");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 100, "reason": "test"}});
    writeln!(stdin, "{cancel}").expect("write");
    stdin.flush().expect("flush");
    // Generous: the run's own wall clock would end it 10 s after it began.
    let left = naps_left_after_4s("24.75");
    drop(child);
    assert!(started, "the command tool never started");
    assert!(
        left.is_empty(),
        "the command tool still runs 4 s after the cancel: {left:?}"
    );
}
