//! Remote MCP servers (`[mcp_servers.X] transport = "http"`) and `[mcp]
//! host_configs`, through the real binary: a lackpy whose remote server is
//! another `lackpy serve --listen` (bearer token from the environment), a
//! wrong token, an unset variable, hostile HTTP servers (a huge answer, no
//! answer), and host application config files under a temporary HOME.

use crate::serve_http::{config as serve_config, Server, TOKEN_A};
use crate::util;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

const TOKEN_VAR: &str = "LACKPY_TEST_REMOTE_TOKEN";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_server.py")
}

/// A workspace whose config points `[mcp_servers.remote]` at `url`.
fn remote_ws(url: &str, extra: &str) -> tempfile::TempDir {
    let cfg = format!(
        "[mcp_servers.remote]\ntransport = \"http\"\nurl = {url:?}\n\
         headers = {{ Authorization = \"Bearer ${{{TOKEN_VAR}}}\" }}\ntimeout_seconds = 20\n{extra}"
    );
    util::workspace(&[(".lackpy/config.toml", &cfg)])
}

/// `lackpy ARGS` with `env` set (and the token variable removed unless set there).
fn lackpy(args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
    let mut c = util::lackpy();
    c.env_remove(TOKEN_VAR);
    for (k, v) in env {
        c.env(k, v);
    }
    c.args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().expect("spawn lackpy");
    if let Some(mut s) = child.stdin.take() {
        let _ = s.write_all(stdin.as_bytes());
    }
    child.wait_with_output().expect("wait lackpy")
}

/// `lackpy SUBCOMMAND --json --workspace WS` with no stdin.
fn lackpy_json(subcommand: &str, ws: &Path, env: &[(&str, &str)]) -> Output {
    let ws = ws.to_str().unwrap_or(".");
    lackpy(&[subcommand, "--json", "--workspace", ws], "", env)
}

fn run(ws: &Path, tools: &str, program: &str, env: &[(&str, &str)]) -> (Output, Value) {
    let ws = ws.to_str().unwrap_or(".");
    let out = lackpy(
        &["run", "--json", "--workspace", ws, "--tools", tools, "-"],
        program,
        env,
    );
    let v = util::json(&out);
    (out, v)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Every file under `dir` (recursively), as text.
fn all_text_under(dir: &Path) -> String {
    let mut out = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(b) = std::fs::read(&p) {
                out.push_str(&String::from_utf8_lossy(&b));
            }
        }
    }
    out
}

#[test]
fn a_program_calls_a_tool_of_another_lackpy_serve_over_http() {
    let served = util::workspace(&[("note.txt", "from the remote side")]);
    let srv = Server::start(&serve_config(served.path(), "", ""));
    let ws = remote_ws(&srv.url(), "");
    let env = [(TOKEN_VAR, TOKEN_A)];
    let prog = "r = run_program(program=\"read_file('note.txt')\")\nr['value']";
    let (out, v) = run(ws.path(), "run_program", prog, &env);
    assert_eq!(v["ok"], true, "{v} {}", stderr(&out));
    assert_eq!(v["value"], "from the remote side", "{v}");
    // The grade comes from the remote tool's annotations (or the
    // conservative default), and the call is traced.
    assert_eq!(v["trace"][0]["tool"], "run_program", "{v}");
    // `lackpy tools` shows the server by url, never its headers' values.
    let tools = lackpy_json("tools", ws.path(), &env);
    let t = util::json(&tools);
    let servers = t["mcp_servers"].as_array().cloned().unwrap_or_default();
    assert_eq!(servers.len(), 1, "{t}");
    assert_eq!(servers[0]["endpoint"], srv.url().as_str());
    assert_eq!(servers[0]["headers"][0], "Authorization");
    // `doctor --json` reports it with its url and tool count.
    let doc = lackpy_json("doctor", ws.path(), &env);
    let d: Value = serde_json::from_slice(&doc.stdout).unwrap_or(Value::Null);
    let report = &d["mcp_servers"][0];
    assert_eq!(report["endpoint"], srv.url().as_str(), "{d}");
    assert!(report["tools"].as_u64().unwrap_or(0) >= 1, "{d}");
    // The token is nowhere: stdout, stderr, traces, the tool-list cache.
    for (what, text) in [
        (
            "run stdout",
            String::from_utf8_lossy(&out.stdout).to_string(),
        ),
        ("run stderr", stderr(&out)),
        (
            "tools stdout",
            String::from_utf8_lossy(&tools.stdout).to_string(),
        ),
        ("tools stderr", stderr(&tools)),
        (
            "doctor stdout",
            String::from_utf8_lossy(&doc.stdout).to_string(),
        ),
        ("doctor stderr", stderr(&doc)),
        (".lackpy", all_text_under(&ws.path().join(".lackpy"))),
    ] {
        assert!(!text.contains(TOKEN_A), "the token leaked into {what}");
    }
    let cache = all_text_under(&ws.path().join(".lackpy/cache"));
    assert!(
        cache.contains("run_program"),
        "the tool list was not cached"
    );
}

#[test]
fn a_wrong_token_makes_the_tools_unavailable_with_the_401_hint() {
    let served = util::workspace(&[]);
    let srv = Server::start(&serve_config(served.path(), "", ""));
    let ws = remote_ws(&srv.url(), "");
    let (out, v) = run(
        ws.path(),
        "run_program",
        "run_program(program='1')",
        &[(TOKEN_VAR, "not-the-token-9d1e")],
    );
    assert_eq!(v["ok"], false, "{v}");
    let err = stderr(&out);
    assert!(
        err.contains("refused the credentials in headers.Authorization"),
        "{err}"
    );
    assert!(err.contains("its tools are unavailable"), "{err}");
    assert!(!err.contains("not-the-token-9d1e") && !v.to_string().contains("not-the-token-9d1e"));
}

#[test]
fn an_unset_header_variable_is_a_config_error_naming_it() {
    let ws = remote_ws("http://127.0.0.1:9/mcp", "");
    let (out, v) = run(ws.path(), "run_program", "run_program(program='1')", &[]);
    assert_eq!(out.status.code(), Some(3), "{v} {}", stderr(&out));
    assert_eq!(v["error"]["kind"], "config", "{v}");
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("mcp_servers.remote.headers.Authorization") && msg.contains(TOKEN_VAR),
        "{msg}"
    );
}

#[test]
fn http_keys_are_checked_at_load() {
    for (table, key) in [
        (
            "url = \"https://h.example/mcp\"\ncommand = \"x\"",
            "mcp_servers.r.command",
        ),
        (
            "url = \"https://h.example/mcp\"\nworkspace = \"write\"",
            "mcp_servers.r.workspace",
        ),
        ("url = \"ftp://h.example/mcp\"", "mcp_servers.r.url"),
        ("headers = { A = \"b\" }", "mcp_servers.r.url"),
    ] {
        let cfg = format!("[mcp_servers.r]\ntransport = \"http\"\n{table}\n");
        let ws = util::workspace(&[(".lackpy/config.toml", &cfg)]);
        let (out, v) = run(ws.path(), "read_file", "1", &[]);
        assert_eq!(out.status.code(), Some(3), "{table}: {v}");
        let msg = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            msg.contains(key) && msg.contains("config.toml"),
            "{table}: {msg}"
        );
    }
    // Plain http to another host: loads with a warning about clear text.
    let ws = util::workspace(&[(
        ".lackpy/config.toml",
        "[mcp_servers.r]\ntransport = \"http\"\nurl = \"http://h.example/mcp\"\n",
    )]);
    let (out, v) = run(ws.path(), "read_file", "1", &[]);
    assert_eq!(v["ok"], true, "{v}");
    assert!(stderr(&out).contains("in clear"), "{}", stderr(&out));
}

/// A hostile HTTP server on a fresh loopback address
/// ([`crate::util::fake_server::loopback_ip`]): every connection gets
/// `answer`.
fn hostile(answer: fn(std::net::TcpStream)) -> String {
    let l = TcpListener::bind((crate::util::fake_server::loopback_ip(), 0)).expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || answer(s));
        }
    });
    format!("http://{addr}/mcp")
}

/// Read one whole request (head and `Content-Length` body), for at most
/// 10 s, so that nothing is left unread when the answer is written (unread
/// bytes at close make the kernel reset the connection).
fn read_request(s: &mut std::net::TcpStream) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || s.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
        let text = String::from_utf8_lossy(&got).to_ascii_lowercase();
        if let Some(end) = text.find("\r\n\r\n") {
            let body = text[..end]
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if got.len() >= end + 4 + body {
                return;
            }
        }
    }
}

#[test]
fn hostile_remote_servers_end_with_a_clear_error_in_time() {
    // A body far beyond the response cap.
    let huge = hostile(|mut s| {
        read_request(&mut s);
        let _ = s.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n",
        );
        let chunk = vec![b' '; 1 << 20];
        for _ in 0..100 {
            if s.write_all(&chunk).is_err() {
                return;
            }
        }
    });
    // An answer that never comes.
    let silent = hostile(|mut s| {
        read_request(&mut s);
        std::thread::sleep(Duration::from_secs(120));
    });
    for (url, expect) in [(huge, "maximum size"), (silent, "did not answer within")] {
        let ws = remote_ws(&url, "");
        // timeout_seconds = 2 for this server.
        let cfg =
            std::fs::read_to_string(ws.path().join(".lackpy/config.toml")).unwrap_or_default();
        std::fs::write(
            ws.path().join(".lackpy/config.toml"),
            cfg.replace("timeout_seconds = 20", "timeout_seconds = 2"),
        )
        .expect("write config");
        // A connection that failed before any answer (seen once under CI
        // load: "error sending request") tested no cap or timeout; it is
        // made again, at most 3 times in all.
        let mut attempt = 0;
        let (out, v, took) = loop {
            attempt += 1;
            let t0 = Instant::now();
            let (out, v) = run(
                ws.path(),
                "run_program",
                "run_program(program='1')",
                &[(TOKEN_VAR, "t")],
            );
            let took = t0.elapsed();
            if attempt < 3 && stderr(&out).contains("cannot connect to") {
                eprintln!("{url}: attempt {attempt} did not connect: {}", stderr(&out));
                continue;
            }
            break (out, v, took);
        };
        assert_eq!(v["ok"], false, "{v}");
        let err = stderr(&out);
        assert!(
            err.contains(expect) && err.contains("its tools are unavailable"),
            "{url}: {err}"
        );
        assert!(took < Duration::from_secs(60), "{url}: took {took:?}");
    }
}

/// A temporary HOME with a Claude Desktop config naming the stdio fixture
/// server as `desk`.
fn home_with_claude_desktop() -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("home");
    let dir = home.path().join(".config/Claude");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let cfg = serde_json::json!({
        "mcpServers": {
            "desk": {"command": "python3", "args": [fixture().display().to_string()]},
            "gone": {"type": "sse", "url": "https://h.example/sse"}
        }
    });
    std::fs::write(dir.join("claude_desktop_config.json"), cfg.to_string()).expect("write");
    home
}

#[test]
fn host_config_servers_add_tools_after_own_servers() {
    assert!(util::have_python(), "python3 is required for this test");
    let home = home_with_claude_desktop();
    let home_s = home.path().to_str().unwrap_or("/");
    let ws = util::workspace(&[(
        ".lackpy/config.toml",
        "[mcp]\nhost_configs = [\"claude-desktop\", \"cursor\"]\n",
    )]);
    let out = lackpy_json("tools", ws.path(), &[("HOME", home_s)]);
    let v = util::json(&out);
    let err = stderr(&out);
    let names: Vec<&str> = v["tools"]
        .as_array()
        .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        names.contains(&"echo") && names.contains(&"add"),
        "{v} {err}"
    );
    let servers = v["mcp_servers"].to_string();
    assert!(servers.contains("claude_desktop_config.json"), "{servers}");
    // The missing Cursor file and the sse entry are warnings, not errors.
    assert!(
        err.contains(".cursor/mcp.json") && err.contains("does not exist"),
        "{err}"
    );
    assert!(err.contains("sse"), "{err}");
    // A program calls the host config's server.
    let (out, r) = run(ws.path(), "add", "add(2, 3)['sum']", &[("HOME", home_s)]);
    assert_eq!(r["value"], 5, "{r} {}", stderr(&out));

    // Own [mcp_servers] win: the same tools from `desk` are shadowed and reported.
    let own = format!(
        "[mcp_servers.fake]\ncommand = \"python3\"\nargs = [{:?}]\n\n[mcp]\nhost_configs = [\"claude-desktop\"]\n",
        fixture().display().to_string()
    );
    let ws2 = util::workspace(&[(".lackpy/config.toml", &own)]);
    let out = lackpy_json("tools", ws2.path(), &[("HOME", home_s)]);
    let v = util::json(&out);
    let shadowed = v["shadowed"].to_string();
    assert!(
        shadowed.contains("mcp server desk (from")
            && shadowed.contains("its tool echo is hidden by the tool of mcp server fake"),
        "{shadowed}"
    );
}

#[test]
fn a_host_config_inside_the_workspace_is_refused() {
    let ws = util::workspace(&[
        (
            ".lackpy/config.toml",
            "[mcp]\nhost_configs = [\".mcp.json\"]\n",
        ),
        (
            ".mcp.json",
            "{\"mcpServers\": {\"x\": {\"command\": \"/bin/true\"}}}",
        ),
    ]);
    let (out, v) = run(ws.path(), "read_file", "1", &[]);
    assert_eq!(out.status.code(), Some(3), "{v}");
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains(".mcp.json") && msg.contains("host config file"),
        "{msg}"
    );
    // A malformed host config outside the workspace only warns.
    let home = tempfile::tempdir().expect("home");
    std::fs::create_dir_all(home.path().join(".cursor")).expect("mkdir");
    std::fs::write(home.path().join(".cursor/mcp.json"), "{broken").expect("write");
    let ws = util::workspace(&[(
        ".lackpy/config.toml",
        "[mcp]\nhost_configs = [\"cursor\"]\n",
    )]);
    let (out, v) = run(
        ws.path(),
        "read_file",
        "1",
        &[("HOME", home.path().to_str().unwrap_or("/"))],
    );
    assert_eq!(v["ok"], true, "{v}");
    assert!(stderr(&out).contains("not valid JSON"), "{}", stderr(&out));
}

/// The body of one HTTP request read from `s` (head and `Content-Length`
/// body), or `None` once the peer closed or went quiet for 10 s.
fn next_body(s: &mut std::net::TcpStream) -> Option<String> {
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if got.len() >= end + 4 + len {
                return Some(String::from_utf8_lossy(&got[end + 4..end + 4 + len]).into_owned());
            }
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// A remote MCP server that, during a call of its one tool `chatty`,
/// sends 50,000 `roots/list` requests of its own on the call's event
/// stream, then the answer.
fn chatty_remote(mut s: std::net::TcpStream) {
    while let Some(body) = next_body(&mut s) {
        let msg: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let (id, method) = (&msg["id"], msg["method"].as_str().unwrap_or(""));
        let json = |v: Value| {
            let b = v.to_string();
            format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s1\r\nContent-Length: {}\r\n\r\n{b}", b.len())
        };
        let reply = match method {
            _ if id.is_null() || method.is_empty() => {
                "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_string()
            }
            "initialize" => json(serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "chatty", "version": "1"}}})),
            "tools/list" => json(serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
                "tools": [{"name": "chatty", "inputSchema": {"type": "object"}}]}})),
            "tools/call" => {
                let mut out = String::from(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nMcp-Session-Id: s1\r\nConnection: close\r\n\r\n",
                );
                for i in 0..50_000 {
                    out.push_str(&format!(
                        "data: {{\"jsonrpc\":\"2.0\",\"id\":\"s{i}\",\"method\":\"roots/list\"}}\n\n"
                    ));
                }
                out.push_str(&format!(
                    "data: {}\n\n",
                    serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
                        "content": [{"type": "text", "text": "done"}]}})
                ));
                let _ = s.write_all(out.as_bytes());
                return;
            }
            _ => json(serde_json::json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "no"}})),
        };
        if s.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// `lackpy run --json` of `TOOL()` with the remote server at `url` as the
/// workspace's `[mcp_servers.remote]`: its output and peak RSS (KiB).
fn run_remote_peak(url: &str, timeout_seconds: u32, tool: &str) -> (std::process::Output, u64) {
    let cfg = format!(
        "[mcp_servers.remote]\ntransport = \"http\"\nurl = {url:?}\ntimeout_seconds = {timeout_seconds}\n"
    );
    let ws = util::workspace(&[(".lackpy/config.toml", &cfg)]);
    let ws_s = ws.path().to_str().unwrap_or(".");
    let args = ["run", "--json", "--workspace", ws_s, "--tools", tool, "-"];
    util::run_peak(&args, &format!("{tool}()"))
}

/// A remote server's own requests (on its event stream) are bounded as a
/// stdio server's are: each was handed to rmcp, whose task for it held
/// the answer while it waited to be sent; 50,000 took `lackpy run` to
/// 221 MiB. At most `MAX_SERVER_REQUESTS` now wait; the call is answered.
#[test]
fn a_remote_servers_own_requests_are_bounded() {
    let url = hostile(chatty_remote);
    let (out, peak) = run_remote_peak(&url, 20, "chatty");
    let v = util::json(&out);
    assert_eq!(v["value"], "done", "{v} {}", stderr(&out));
    assert!(
        stderr(&out).contains("MAX_SERVER_REQUESTS"),
        "{}",
        stderr(&out)
    );
    assert!(peak < 120_000, "lackpy run peaked at {peak} KiB");
}

/// 15 MiB of `0,0,…` in the `result` of a JSON-RPC response to `id`.
fn zeros_answer(id: &Value) -> String {
    let mut b = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[],\"protocolVersion\":\"2025-06-18\",\"capabilities\":{{}},\"serverInfo\":{{\"name\":\"z\",\"version\":\"1\"}},\"structuredContent\":{{\"x\":["
    );
    b.push_str(&"0,".repeat(7_500_000));
    b.push_str("0]}}}");
    b
}

/// A remote MCP server whose answer to `tools/call` is [`zeros_answer`],
/// as one JSON body (`sse` false) or one SSE event; with `init`, its
/// answer to `initialize` is that, as a JSON body.
fn zeros_remote(mut s: std::net::TcpStream, sse: bool, init: bool) {
    while let Some(body) = next_body(&mut s) {
        let msg: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let (id, method) = (&msg["id"], msg["method"].as_str().unwrap_or(""));
        let json = |b: String| {
            format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s1\r\nContent-Length: {}\r\n\r\n{b}", b.len())
        };
        let reply = match method {
            _ if id.is_null() || method.is_empty() => {
                "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_string()
            }
            "initialize" if init => json(zeros_answer(id)),
            "initialize" => json(
                serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "zeros", "version": "1"}}})
                .to_string(),
            ),
            "tools/list" => json(
                serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {
                "tools": [{"name": "zeros", "inputSchema": {"type": "object"}}]}})
                .to_string(),
            ),
            "tools/call" => {
                let b = zeros_answer(id);
                if sse {
                    let out = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nMcp-Session-Id: s1\r\nConnection: close\r\n\r\ndata: {b}\n\n"
                    );
                    let _ = s.write_all(out.as_bytes());
                    return;
                }
                json(b)
            }
            _ => json(
                serde_json::json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "no"}})
                .to_string(),
            ),
        };
        if s.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// A remote server's answer was parsed whole by rmcp's HTTP client (up to
/// 16 MiB, `MAX_REMOTE_RESPONSE`) into `serde_json::Value`s before lackpy
/// counted anything: 15 MiB of `0,0,…` took `lackpy run` to about 1 GiB
/// for a call that then failed `TooLarge` anyway (the known gap after
/// redteam-8). Its values are now counted before rmcp parses it, as a
/// stdio server's lines are: the call fails at once with `TooLarge`
/// naming `MAX_LINE_VALUES`, small; as a JSON body and as an SSE event.
#[test]
fn remote_answers_are_counted_before_they_are_parsed() {
    let json_url = hostile(|s| zeros_remote(s, false, false));
    let sse_url = hostile(|s| zeros_remote(s, true, false));
    for url in [json_url, sse_url] {
        let (out, peak) = run_remote_peak(&url, 30, "zeros");
        let v = util::json(&out);
        assert_eq!(v["ok"], false, "{url}: {v} {}", stderr(&out));
        let err = v["error"].to_string();
        assert!(err.contains("MAX_LINE_VALUES"), "{url}: {v}");
        assert!(peak < 200_000, "{url}: lackpy run peaked at {peak} KiB");
    }
    // The answer to `initialize`, at every connection: the server's tools
    // are unavailable, with a warning naming the bound.
    let init_url = hostile(|s| zeros_remote(s, false, true));
    let cfg = format!(
        "[mcp_servers.remote]\ntransport = \"http\"\nurl = {init_url:?}\ntimeout_seconds = 30\n"
    );
    let ws = util::workspace(&[(".lackpy/config.toml", &cfg)]);
    let ws_s = ws.path().to_str().unwrap_or(".");
    let (out, peak) = util::run_peak(&["tools", "--json", "--workspace", ws_s], "");
    let err = stderr(&out);
    assert!(
        err.contains("MAX_LINE_VALUES") && err.contains("its tools are unavailable"),
        "{err}"
    );
    assert!(peak < 200_000, "lackpy tools peaked at {peak} KiB");
}
