//! Helpers shared by the integration tests: the real binary, fresh
//! workspaces, and running a program.

#![allow(dead_code)]

/// The fake model endpoints, shared with the inferencer's own wire tests,
/// and [`fake_server::loopback_ip`] for every test server.
#[path = "../inferencer/tests/support/fake_server.rs"]
pub mod fake_server;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Path of the `lackpy` binary cargo built for these tests.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_lackpy"))
}

/// A `lackpy` command with a clean environment (no user config leaks in).
pub fn lackpy() -> Command {
    let mut c = Command::new(bin());
    c.env_remove("LACKPY_CONFIG").env_remove("LACKPY_LOG");
    c.env("XDG_CONFIG_HOME", "/nonexistent-lackpy-test-config");
    c
}

/// Run `lackpy` with `args`, feeding `stdin`.
pub fn run_with_stdin(args: &[&str], stdin: &str, cwd: Option<&Path>) -> Output {
    let mut c = lackpy();
    c.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(d) = cwd {
        c.current_dir(d);
    }
    let mut child = c.spawn().expect("spawn lackpy");
    if let Some(mut s) = child.stdin.take() {
        let _ = s.write_all(stdin.as_bytes());
    }
    child.wait_with_output().expect("wait lackpy")
}

/// Parse stdout as one JSON object.
pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// A fresh temporary workspace holding `files` (path, content).
pub fn workspace(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (p, content) in files {
        let path = dir.path().join(p);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, content).expect("write");
    }
    dir
}

/// Whether `python3` runs here. Tests that need it assert this (they fail
/// rather than pass without it).
pub fn have_python() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "pass"])
        .status()
        .is_ok_and(|s| s.success())
}

/// Skip the calling test: `name` could not check what it names, for
/// `reason`. The skip is visible even under the test harness's output
/// capture (written straight to stderr, not through `eprintln!`) and
/// counted (`SKIPPED n: ...`, n counting this binary's skips so far). With
/// `LACKPY_TESTS_NO_SKIP=1` (CI on a machine that has everything) a skip is
/// a failure instead.
pub fn skip(name: &str, reason: &str) {
    use std::io::Write;
    use std::sync::atomic::{AtomicUsize, Ordering};
    static SKIPS: AtomicUsize = AtomicUsize::new(0);
    assert!(
        std::env::var_os("LACKPY_TESTS_NO_SKIP").is_none_or(|v| v != "1"),
        "{name}: {reason} (LACKPY_TESTS_NO_SKIP=1 forbids skipping)"
    );
    let n = SKIPS.fetch_add(1, Ordering::SeqCst) + 1;
    let _ = writeln!(std::io::stderr(), "SKIPPED {n}: {name}: {reason}");
}

/// `lackpy run --json --workspace WS --tools TOOLS` with `program` on stdin.
pub fn run_json(ws: &Path, tools: &str, program: &str) -> Output {
    let ws = ws.to_str().unwrap_or(".");
    let args = ["run", "--json", "--workspace", ws, "--tools", tools];
    run_with_stdin(&args, program, None)
}

/// Spawn `cmd` (`what` names it in the panic) with its stdin, stdout and
/// stderr as given.
pub fn spawn(
    cmd: &mut Command,
    [stdin, stdout, stderr]: [Stdio; 3],
    what: &str,
) -> std::process::Child {
    let started = cmd.stdin(stdin).stdout(stdout).stderr(stderr).spawn();
    started.unwrap_or_else(|e| panic!("spawn {what}: {e}"))
}

/// The value of the gauge `name` in a Prometheus text page `text` (a
/// `/metrics` answer of `lackpy serve`, headers or not).
pub fn gauge_in(text: &str, name: &str) -> u64 {
    let prefix = format!("{name} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no gauge {name} in: {text}"))
}

/// Ask `child` to stop (SIGTERM), as a service manager does.
pub fn sigterm(child: &std::process::Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
}

/// Stop `child`: SIGTERM, then SIGKILL if it has not exited within `grace`;
/// reaped either way.
pub fn stop(child: &mut std::process::Child, grace: std::time::Duration) {
    sigterm(child);
    let deadline = std::time::Instant::now() + grace;
    while std::time::Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A `lackpy mcp` session driven line by line over raw JSON-RPC: a thread
/// hands each stdout line to [`McpLines::recv`]; started initialized. The
/// process is killed and reaped when this is dropped, however the test
/// ends.
pub struct McpLines {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    rx: std::sync::mpsc::Receiver<String>,
}

impl McpLines {
    /// Start `lackpy mcp` on `ws` and complete the `initialize` handshake.
    pub fn start(ws: &Path) -> Self {
        use std::io::BufRead;
        let mut cmd = lackpy();
        cmd.arg("mcp").arg("--workspace").arg(ws);
        let io = [Stdio::piped(), Stdio::piped(), Stdio::null()];
        let mut child = spawn(&mut cmd, io, "lackpy mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(l) = line else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let mut s = McpLines { child, stdin, rx };
        s.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        );
        let first = s
            .recv(std::time::Duration::from_secs(30))
            .unwrap_or_default();
        assert!(first.contains("\"id\":1"), "{first}");
        s.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    /// The server's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Write one frame.
    pub fn send(&mut self, v: &serde_json::Value) {
        self.send_line(&v.to_string());
    }

    /// Write one line as it is (a frame that may not be valid).
    pub fn send_line(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("write");
        self.stdin.flush().expect("flush");
    }

    /// The next stdout line, waiting at most `wait`.
    pub fn recv(&self, wait: std::time::Duration) -> Option<String> {
        self.rx.recv_timeout(wait).ok()
    }
}

impl Drop for McpLines {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run `lackpy` with `args`, feeding `stdin`, and its peak resident set
/// size in KiB: the largest `VmHWM` of `/proc/PID/status` read while it
/// ran, polled every 2 ms once the child has exec'd (`Name: lackpy`).
/// Why not `wait4`'s `ru_maxrss`: a child spawned from this test process
/// (large while the whole suite runs) starts with its peak, since exec
/// folds the parent's address space's high-water mark into it. A peak in
/// the last milliseconds before exit can be missed: this is a lower
/// bound, for asserting an upper limit on memory that a regression holds
/// for much longer.
pub fn run_peak(args: &[&str], stdin: &str) -> (Output, u64) {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let mut c = lackpy();
    c.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn lackpy");
    let pid = child.id();
    let peak = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let watch = {
        let (peak, done) = (peak.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let status =
                    std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                let field = |name: &str| {
                    status
                        .lines()
                        .find_map(|l| l.strip_prefix(name))
                        .map(str::trim)
                };
                if field("Name:") == Some("lackpy") {
                    let kib = field("VmHWM:")
                        .and_then(|v| v.split_whitespace().next()?.parse().ok())
                        .unwrap_or(0);
                    peak.fetch_max(kib, Ordering::Relaxed);
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        })
    };
    if let Some(mut s) = child.stdin.take() {
        let _ = s.write_all(stdin.as_bytes());
    }
    let out = child.wait_with_output().expect("wait lackpy");
    done.store(true, Ordering::Relaxed);
    let _ = watch.join();
    (out, peak.load(Ordering::Relaxed))
}
