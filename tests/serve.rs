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
    _dir: tempfile::TempDir,
}

impl Server {
    fn start(config: &str) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        // Other uids must reach the socket; access is decided by peer credentials.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        let socket = dir.path().join("s.sock");
        let cfg = dir.path().join("serve.toml");
        std::fs::write(&cfg, config).expect("write config");
        let child = Command::new(bin())
            .args(["serve", "--socket"])
            .arg(&socket)
            .arg("--config")
            .arg(&cfg)
            .env_remove("LACKPY_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn lackpy serve");
        let deadline = Instant::now() + Duration::from_secs(20);
        while UnixStream::connect(&socket).is_err() {
            assert!(Instant::now() < deadline, "lackpy serve did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Server {
            child,
            socket,
            _dir: dir,
        }
    }

    fn terminate(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.terminate();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
    let srv = Server::start(&format!(
        "[serve]\npool_size = 1\nmax_in_flight = 4\n[[serve.clients]]\nuid = {}\nworkspace = {:?}\nmax_concurrent = 1\n",
        uid(),
        ws.path()
    ));
    let mut a = Client::connect(&srv.socket);
    a.initialize();
    let mut b = Client::connect(&srv.socket);
    b.initialize();
    let slow = a.start_run(SLOW);
    std::thread::sleep(Duration::from_millis(400));
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
    let mut srv = Server::start(&format!(
        "[serve]\ndrain_seconds = 20\n[[serve.clients]]\nuid = {}\nworkspace = {:?}\n",
        uid(),
        ws.path()
    ));
    let mut c = Client::connect(&srv.socket);
    c.initialize();
    let id = c.start_run("x = 0\nfor i in range(200000):\n    x += i\nx");
    std::thread::sleep(Duration::from_millis(50));
    srv.terminate();
    let v = c.response(id);
    assert_eq!(
        v["result"]["structuredContent"]["value"],
        json!(19999900000i64),
        "{v}"
    );
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
        eprintln!("skipped: needs root (to act as a second uid) and /usr/bin/python3");
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
