//! `lackpy serve` end to end: the real binary on a unix socket, clients
//! speaking newline-delimited JSON-RPC (MCP) — peer-credential refusal,
//! quotas and backpressure, graceful shutdown with a run in flight, and
//! isolation between two clients' workspaces.

use crate::util::{bin, workspace};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `lackpy serve`, stopped (SIGTERM, then SIGKILL) on drop.
struct Server {
    child: Child,
    socket: PathBuf,
    /// `--metrics-socket`: Prometheus text at `GET /metrics`.
    metrics: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start(config: &str) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        // Other uids must reach the socket; access is decided by peer credentials.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        let socket = dir.path().join("s.sock");
        let metrics = dir.path().join("m.sock");
        let cfg = dir.path().join("serve.toml");
        std::fs::write(&cfg, config).expect("write config");
        let mut cmd = Command::new(bin());
        cmd.args(["serve", "--socket"])
            .arg(&socket)
            .arg("--metrics-socket")
            .arg(&metrics)
            .arg("--config")
            .arg(&cfg)
            .env_remove("LACKPY_LOG");
        let io = [Stdio::null(), Stdio::null(), Stdio::null()];
        let child = crate::util::spawn(&mut cmd, io, "lackpy serve");
        let deadline = Instant::now() + Duration::from_secs(20);
        while UnixStream::connect(&socket).is_err() {
            assert!(Instant::now() < deadline, "lackpy serve did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Server {
            child,
            socket,
            metrics,
            _dir: dir,
        }
    }

    /// The whole response to `GET path` on the metrics socket.
    fn get(&self, path: &str) -> String {
        let mut s = UnixStream::connect(&self.metrics).expect("connect metrics socket");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .expect("write");
        let mut text = String::new();
        std::io::Read::read_to_string(&mut s, &mut text).expect("read metrics");
        text
    }

    /// The value of the gauge `name` on the metrics socket.
    fn gauge(&self, name: &str) -> u64 {
        crate::util::gauge_in(&self.get("/metrics"), name)
    }

    /// Wait until `/readyz` says the server is draining (SIGTERM handled).
    fn wait_draining(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self
            .get("/readyz")
            .lines()
            .next()
            .is_some_and(|l| l.contains(" 503 "))
        {
            assert!(
                Instant::now() < deadline,
                "readyz still ok 20 s after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Wait until the server reports `n` runs in flight: proof that it has
    /// read a request and its run has started.
    fn wait_in_flight(&self, n: u64) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.gauge("lackpy_runs_in_flight") < n {
            assert!(Instant::now() < deadline, "no run in flight after 20 s");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn terminate(&mut self) {
        crate::util::sigterm(&self.child);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        crate::util::stop(&mut self.child, Duration::from_secs(15));
    }
}

/// A workspace with `a.txt` that other uids may enter (the root tests'
/// second client runs as nobody).
fn shared_workspace() -> tempfile::TempDir {
    let ws = workspace(&[("a.txt", "A")]);
    std::fs::set_permissions(ws.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    ws
}

/// `lackpy serve` with `[serve]` settings `serve` and one client rule: this
/// process's uid on `ws`, with the rule's settings `client` (TOML lines).
fn start_own(ws: &Path, serve: &str, client: &str) -> Server {
    Server::start(&format!(
        "[serve]\n{serve}[[serve.clients]]\nuid = {}\nworkspace = {ws:?}\n{client}",
        uid()
    ))
}

/// A minimal MCP client on the socket.
struct Client {
    w: UnixStream,
    r: BufReader<UnixStream>,
    id: u64,
}

impl Client {
    fn connect(socket: &Path) -> Client {
        let w = UnixStream::connect(socket).expect("connect");
        w.set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        let r = BufReader::new(w.try_clone().expect("clone"));
        Client { w, r, id: 0 }
    }

    fn send(&mut self, v: &Value) {
        let mut line = v.to_string();
        line.push('\n');
        self.w.write_all(line.as_bytes()).expect("write");
    }

    fn line(&mut self) -> Value {
        let mut s = String::new();
        self.r.read_line(&mut s).expect("read");
        serde_json::from_str(&s).unwrap_or_else(|e| panic!("not JSON ({e}): {s:?}"))
    }

    fn request(&mut self, method: &str, params: Value) -> u64 {
        self.id += 1;
        let id = self.id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn response(&mut self, id: u64) -> Value {
        loop {
            let v = self.line();
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    fn initialize(&mut self) -> Value {
        let id = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "serve-test", "version": "0"}}),
        );
        let v = self.response(id);
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        v
    }

    fn start_run(&mut self, program: &str) -> u64 {
        self.request(
            "tools/call",
            json!({"name": "run_program", "arguments": {"program": program}}),
        )
    }

    fn run(&mut self, program: &str) -> Value {
        let id = self.start_run(program);
        self.response(id)["result"]["structuredContent"].clone()
    }
}

/// A program that keeps a worker busy for seconds (it ends on a limit).
const SLOW: &str = "x = 0\nfor i in range(100000000):\n    x += 1\nx";

fn uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

#[test]
fn unknown_peer_is_refused_with_a_clear_error() {
    let ws = workspace(&[("a.txt", "A")]);
    let other = uid().wrapping_add(4242);
    let srv = Server::start(&format!(
        "[[serve.clients]]\nuid = {other}\nworkspace = {:?}\n",
        ws.path()
    ));
    let mut c = Client::connect(&srv.socket);
    let v = c.line();
    assert_eq!(v["error"]["code"], json!(-32001), "{v}");
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains(&format!("uid {}", uid())) && msg.contains("not allowed"),
        "{msg}"
    );
    // And the connection is closed.
    let mut rest = String::new();
    assert_eq!(c.r.read_line(&mut rest).unwrap_or(0), 0);
}

#[test]
fn quota_and_backpressure_refuse_with_retry_hint() {
    let ws = workspace(&[("a.txt", "A")]);
    let srv = start_own(
        ws.path(),
        "pool_size = 1\nmax_in_flight = 4\n",
        "max_concurrent = 1\n",
    );
    let mut a = Client::connect(&srv.socket);
    a.initialize();
    let mut b = Client::connect(&srv.socket);
    b.initialize();
    let slow = a.start_run(SLOW);
    srv.wait_in_flight(1);
    let v = b.run("1 + 1");
    assert_eq!(v["ok"], json!(false), "{v}");
    assert_eq!(v["error"]["kind"], json!("limit"), "{v}");
    assert_eq!(v["error"]["type"], json!("quota"), "{v}");
    assert!(
        v["error"]["hint"]
            .as_str()
            .unwrap_or_default()
            .contains("retry after"),
        "{v}"
    );
    // The slow run still ends normally, and then the quota is free again.
    let done = a.response(slow);
    assert!(
        done["result"]["structuredContent"]["error"]["kind"] == json!("limit"),
        "{done}"
    );
    let v = b.run("1 + 1");
    assert_eq!(v["value"], json!(2), "{v}");
}

#[test]
fn sigterm_drains_a_run_in_flight_then_exits() {
    let ws = workspace(&[("a.txt", "A")]);
    let mut srv = start_own(ws.path(), "drain_seconds = 20\n", "");
    let mut c = Client::connect(&srv.socket);
    c.initialize();
    // About a second of work (debug build), well inside the 10 s wall limit.
    let id = c.start_run("x = 0\nfor i in range(2000000):\n    x += i\nx");
    // SIGTERM only once the server has read the request and started the run:
    // a request still unread in the socket buffer is not "in flight".
    srv.wait_in_flight(1);
    // A second client's run that lasts seconds keeps the server draining
    // (not yet exited) while the refusal below is checked, however fast
    // the first run is.
    let mut other = Client::connect(&srv.socket);
    other.initialize();
    let slow = other.start_run(SLOW);
    srv.wait_in_flight(2);
    srv.terminate();
    srv.wait_draining();
    // A run asked for after SIGTERM, on the open connection, is refused at
    // once with a clear error (steady traffic must not keep the drain from
    // ever reaching zero runs); the one in flight finishes.
    let refused = c.run("1 + 1");
    assert_eq!(refused["ok"], json!(false), "{refused}");
    assert_eq!(refused["error"]["kind"], json!("limit"), "{refused}");
    assert_eq!(refused["error"]["type"], json!("draining"), "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("shutting down")),
        "{refused}"
    );
    let v = c.response(id);
    assert_eq!(
        v["result"]["structuredContent"]["value"],
        json!(1999999000000i64),
        "{v}"
    );
    // The slow run ends on its limit; its client gets its answer.
    let v = other.response(slow);
    assert_eq!(v["result"]["structuredContent"]["ok"], json!(false), "{v}");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(status)) = srv.child.try_wait() {
            assert!(status.success(), "{status:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "server did not exit after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!srv.socket.exists(), "socket file removed on shutdown");
    // No new connections after shutdown.
    assert!(UnixStream::connect(&srv.socket).is_err());
}

#[test]
fn two_clients_never_see_each_others_workspace() {
    let python = Path::new("/usr/bin/python3");
    if uid() != 0 || !python.exists() {
        crate::util::skip(
            "serve::two_clients_never_see_each_others_workspace",
            "needs root (to act as a second uid) and /usr/bin/python3",
        );
        return;
    }
    let ws_a = workspace(&[("a.txt", "secret of A")]);
    let ws_b = workspace(&[("a.txt", "B's own file")]);
    for ws in [&ws_a, &ws_b] {
        std::fs::set_permissions(ws.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let srv = Server::start(&format!(
        "[[serve.clients]]\nuid = 0\nworkspace = {:?}\n[[serve.clients]]\nuid = 65534\nworkspace = {:?}\n",
        ws_a.path(),
        ws_b.path()
    ));
    let mut root = Client::connect(&srv.socket);
    root.initialize();
    assert_eq!(
        root.run("read_file('a.txt')")["value"],
        json!("secret of A")
    );

    // The second client runs as uid 65534 (a separate process).
    let client = ws_b.path().join("client.py");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/mcp_client.py"),
        &client,
    )
    .expect("copy client");
    let as_nobody = |program: &str| -> Value {
        let out = Command::new(python)
            .arg(&client)
            .arg(&srv.socket)
            .arg(program)
            .uid(65534)
            .gid(65534)
            .output()
            .expect("run client");
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{e}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    };
    assert_eq!(
        as_nobody("read_file('a.txt')")["value"],
        json!("B's own file")
    );
    let escape = format!("read_file({:?})", ws_a.path().join("a.txt"));
    let v = as_nobody(&escape);
    assert_eq!(v["error"]["kind"], json!("tool"), "{v}");
    assert!(!v.to_string().contains("secret of A"));
    let rel = as_nobody("find_files('../**/a.txt')");
    assert!(!rel.to_string().contains("secret of A"), "{rel}");
    // Traces land in each client's own workspace only.
    let traces_a = std::fs::read_dir(ws_a.path().join(".lackpy/traces"))
        .map(|d| {
            d.flatten()
                .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
                .collect::<String>()
        })
        .unwrap_or_default();
    assert!(
        !traces_a.contains("B's own file") && !traces_a.contains("find_files"),
        "{traces_a}"
    );
}

/// Connect to `socket` with effective uid `uid`: the `setresuid` system call
/// (not the libc wrapper, which changes every thread) in a thread of its own
/// changes that thread's credentials only, which `SO_PEERCRED` reports; the
/// thread ends right after, the socket stays. Needs root.
fn connect_as(socket: &Path, uid: u32) -> Client {
    let socket = socket.to_path_buf();
    std::thread::spawn(move || {
        // SAFETY: a raw setresuid(-1, uid, -1) only changes this thread's
        // effective uid; it takes no pointers.
        let r =
            unsafe { libc::syscall(libc::SYS_setresuid, libc::uid_t::MAX, uid, libc::uid_t::MAX) };
        assert_eq!(r, 0, "setresuid: {}", std::io::Error::last_os_error());
        Client::connect(&socket)
    })
    .join()
    .expect("connect thread")
}

/// Whether the tests acting as a second uid can run; when not, `test` is
/// skipped visibly ([`crate::util::skip`]).
fn needs_root(test: &str) -> bool {
    if uid() != 0 {
        crate::util::skip(test, "needs root (to act as a second uid)");
        return false;
    }
    true
}

/// A connection the server refused: one JSON-RPC error line, then EOF.
fn refused_line(c: &mut Client) -> Value {
    let v = c.line();
    let mut rest = String::new();
    assert_eq!(
        c.r.read_line(&mut rest).unwrap_or(0),
        0,
        "closed after the error: {rest:?}"
    );
    v
}

/// Open a connection and finish the MCP handshake; `None` if the server
/// answered with an error line instead (a refused connection may already
/// be closed for writing: the request is sent best-effort).
fn open(c: &mut Client) -> Option<Value> {
    c.id += 1;
    let id = c.id;
    let req = json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "serve-test", "version": "0"}}});
    let _ = c.w.write_all(format!("{req}\n").as_bytes());
    let v = c.line();
    if v["id"].is_null() && v.get("error").is_some() {
        return None;
    }
    assert_eq!(v["id"], json!(id), "{v}");
    c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    Some(v)
}

/// Open a connection as `uid` (`None`: as the test process), retrying while
/// the server still counts connections just closed (the start-up probe).
fn open_retrying(socket: &Path, uid: Option<u32>) -> Client {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut c = match uid {
            Some(u) => connect_as(socket, u),
            None => Client::connect(socket),
        };
        if open(&mut c).is_some() {
            return c;
        }
        assert!(Instant::now() < deadline, "never admitted");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn connections_over_the_caps_are_refused_while_other_clients_are_served() {
    if !needs_root("serve::connections_over_the_caps_are_refused_while_other_clients_are_served") {
        return;
    }
    let ws = shared_workspace();
    let srv = Server::start(&format!(
        "[serve]\nmax_connections = 5\n\
         [[serve.clients]]\nuid = 0\nworkspace = {:?}\nmax_connections = 3\n\
         [[serve.clients]]\nuid = 65534\nworkspace = {:?}\n",
        ws.path(),
        ws.path()
    ));
    // The hostile client holds its 3 connections idle; the 4th is refused.
    let mut held: Vec<Client> = (0..3).map(|_| open_retrying(&srv.socket, None)).collect();
    for _ in 0..5 {
        let mut extra = Client::connect(&srv.socket);
        let v = refused_line(&mut extra);
        assert_eq!(v["error"]["code"], json!(-32002), "{v}");
        let msg = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            msg.contains("3 connections") && msg.contains("serve.clients[].max_connections"),
            "{msg}"
        );
        assert_eq!(v["error"]["data"]["max"], json!(3), "{v}");
    }
    // Another client is still served, up to the server's cap (5 in all).
    let mut other = connect_as(&srv.socket, 65534);
    assert!(open(&mut other).is_some());
    assert_eq!(other.run("1 + 1")["value"], json!(2));
    let mut other2 = connect_as(&srv.socket, 65534);
    assert!(open(&mut other2).is_some());
    let mut third = connect_as(&srv.socket, 65534);
    let v = refused_line(&mut third);
    assert_eq!(v["error"]["code"], json!(-32002), "{v}");
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("serve.max_connections"), "{msg}");
    // A closed connection gives its slot back.
    drop(held.pop());
    let mut again = open_retrying(&srv.socket, Some(65534));
    assert_eq!(again.run("2 + 2")["value"], json!(4));
    drop(held);
}

#[test]
fn idle_connections_time_out_but_a_long_run_does_not() {
    let ws = workspace(&[("a.txt", "A")]);
    let srv = start_own(ws.path(), "idle_timeout_seconds = 1\n", "");
    // Silent from the start (never initializes).
    let mut silent = Client::connect(&srv.socket);
    // Initialized, then idle.
    let mut idle = Client::connect(&srv.socket);
    idle.initialize();
    for c in [&mut silent, &mut idle] {
        let v = refused_line(c);
        assert_eq!(v["error"]["code"], json!(-32003), "{v}");
        let msg = v["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains("serve.idle_timeout_seconds"), "{msg}");
    }
    // A run longer than the timeout keeps its connection: the answer arrives.
    let mut busy = Client::connect(&srv.socket);
    busy.initialize();
    let v = busy.run(SLOW);
    assert_eq!(
        v["error"]["kind"],
        json!("limit"),
        "the run's own end, not a closed connection: {v}"
    );
    // And it is still usable right after.
    assert_eq!(busy.run("1 + 1")["value"], json!(2));
}

/// Resident memory of a process, in KiB.
pub(crate) fn vm_rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmRSS:")
}

/// A `/proc/PID/status` memory field (`VmRSS:`, `VmHWM:` the peak), in KiB.
pub(crate) fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

fn run_in(c: &mut Client, program: &str, session: &str) -> Value {
    let id = c.request(
        "tools/call",
        json!({"name": "run_program", "arguments": {"program": program, "session": session}}),
    );
    c.response(id)["result"]["structuredContent"].clone()
}

#[test]
fn sessions_over_the_caps_are_refused_and_memory_stays_bounded() {
    let ws = workspace(&[("a.txt", "A")]);
    let srv = start_own(
        ws.path(),
        "max_sessions = 1000\n",
        "max_sessions = 6\nmax_session_bytes = 10485760\n",
    );
    let mut conns: Vec<Client> = (0..3)
        .map(|_| {
            let mut c = Client::connect(&srv.socket);
            c.initialize();
            c
        })
        .collect();
    // Warm up (first runs start the pool), then measure.
    for c in &mut conns {
        assert_eq!(c.run("1")["value"], json!(1));
    }
    let before = vm_rss_kib(srv.child.id());
    // Every connection tries to keep 12 sessions of 3 MB each (~108 MB in
    // all); the client's budget is 10 MiB: three fit, the rest are refused.
    let big = "x = 'a' * 3000000\nlen(x)";
    let (mut kept, mut refused) = (0, 0);
    for round in 0..12 {
        for (i, c) in conns.iter_mut().enumerate() {
            let v = run_in(c, big, &format!("big-{i}-{round}"));
            assert_eq!(v["value"], json!(3000000), "the run itself happened: {v}");
            if v["ok"] == json!(true) {
                kept += 1;
                continue;
            }
            refused += 1;
            assert_eq!(v["error"]["kind"], json!("limit"), "{v}");
            assert_eq!(v["error"]["type"], json!("SessionLimit"), "{v}");
            let msg = v["error"]["message"].as_str().unwrap_or_default();
            assert!(msg.contains("serve.clients[].max_session_bytes"), "{msg}");
            assert!(msg.contains("10485760"), "{msg}");
        }
    }
    assert_eq!(kept, 3, "three 3 MB sessions fit in 10 MiB");
    assert_eq!(refused, 33);
    // Small sessions fill the count cap (6 in all), then a new one is
    // refused before it runs; an existing session goes on.
    for i in 0..3 {
        let v = run_in(&mut conns[i % 3], "y = 1\ny", &format!("small-{i}"));
        assert_eq!(v["ok"], json!(true), "{v}");
    }
    let v = run_in(&mut conns[1], "y = 1\ny", "small-3");
    assert_eq!(v["ok"], json!(false), "{v}");
    assert_eq!(v["error"]["type"], json!("SessionLimit"), "{v}");
    assert_eq!(v["value"], json!(null), "refused before it ran: {v}");
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("serve.clients[].max_sessions") && msg.contains('6'),
        "{msg}"
    );
    let v = run_in(&mut conns[0], "y + 1", "small-0");
    assert_eq!(v["value"], json!(2), "{v}");
    // What the server kept is the budget, not what was asked for.
    std::thread::sleep(Duration::from_millis(1500)); // two heap trims
    let after = vm_rss_kib(srv.child.id());
    let grown_mib = after.saturating_sub(before) / 1024;
    eprintln!("server VmRSS {before} KiB -> {after} KiB (kept {kept} sessions of 3 MB, refused {refused})");
    assert!(
        grown_mib < 64,
        "server RSS grew by {grown_mib} MiB ({before} -> {after} KiB)"
    );
    // Closing a connection gives its sessions back.
    drop(conns.remove(0));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = run_in(&mut conns[0], "z = 1\nz", "after-close");
        if v["ok"] == json!(true) {
            break;
        }
        assert!(Instant::now() < deadline, "sessions never freed: {v}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn another_client_cannot_use_a_session_or_see_runs_it_did_not_create() {
    if !needs_root("serve::another_client_cannot_use_a_session_or_see_runs_it_did_not_create") {
        return;
    }
    // Both clients on the same workspace: the trace store is shared.
    let ws = shared_workspace();
    let srv = Server::start(&format!(
        "[[serve.clients]]\nuid = 0\nworkspace = {:?}\n[[serve.clients]]\nuid = 65534\nworkspace = {:?}\n",
        ws.path(),
        ws.path()
    ));
    let mut a = Client::connect(&srv.socket);
    a.initialize();
    let v = run_in(
        &mut a,
        "secret = 'marker-of-A-1234'\nlen(secret)",
        "notebook",
    );
    assert_eq!(v["ok"], json!(true), "{v}");
    assert_eq!(
        run_in(&mut a, "secret", "notebook")["value"],
        json!("marker-of-A-1234")
    );

    let mut b = connect_as(&srv.socket, 65534);
    b.initialize();
    let v = run_in(&mut b, "secret", "notebook");
    assert_eq!(v["ok"], json!(false), "{v}");
    assert!(!v.to_string().contains("marker-of-A"), "{v}");
    assert_eq!(
        run_in(&mut b, "mine = 1\nmine", "notebook")["value"],
        json!(1)
    );
    // A's session is untouched by B's cell of the same id.
    let v = run_in(&mut a, "[secret, 'mine' in str(secret)]", "notebook");
    assert_eq!(v["value"], json!(["marker-of-A-1234", false]), "{v}");

    let traces = |c: &mut Client| {
        let id = c.request(
            "tools/call",
            json!({"name": "traces", "arguments": {"limit": 1000}}),
        );
        c.response(id)["result"]["structuredContent"].clone()
    };
    let tb = traces(&mut b);
    assert_eq!(tb["ok"], json!(true), "{tb}");
    assert!(
        !tb.to_string().contains("marker-of-A"),
        "B sees A's runs: {tb}"
    );
    assert!(tb.to_string().contains("mine"), "B sees its own runs: {tb}");
    let ta = traces(&mut a);
    assert!(ta.to_string().contains("marker-of-A"), "{ta}");
    assert!(
        !ta.to_string().contains("mine = 1"),
        "A sees B's runs: {ta}"
    );
}
