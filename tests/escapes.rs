//! The escape corpus (`tests/escapes/*.toml`) run through the real binary.
//!
//! Every case is a hostile program with its expected outcome. The runner
//! gives each case a fresh workspace inside a fresh tempdir, next to a canary
//! file holding a random secret, with symlinks and a fifo planted inside the
//! workspace (see `tests/escapes/README.md`). It then runs
//! `lackpy run - --json --workspace WS --tools …` and checks, for every case:
//!
//! 1. the run ends within [`HARD_DEADLINE`] (after that the whole process
//!    group is SIGKILLed and the case fails);
//! 2. the exit status is 2 (validation) or 1 (runtime, tool, limit), or 0
//!    only where the case allows `ok-harmless`, and agrees with the JSON;
//! 3. the JSON outcome is the expected one (or an accepted alternative);
//! 4. the canary's secret appears nowhere: stdout, stderr, any regular file
//!    in the workspace (traces included);
//! 5. nothing outside the workspace was created or changed;
//! 6. no process the run started is left behind;
//! 7. the run is traced: one run record in `.lackpy/traces`, with every tool call;
//! 8. every trap symlink planted in the workspace is still the same symlink
//!    (a write through a link must never replace the user's link).
//!
//! All violations of all cases are collected and reported together.

use crate::util;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// A run that has not ended after this long is a violation and is killed.
/// Why 30 s: the default wall-clock limit is 10 s; three times that leaves room
/// for a loaded 2-core CI machine running cases in parallel.
const HARD_DEADLINE: Duration = Duration::from_secs(30);

/// Cases run concurrently (the machine has 2 cores; most cases wait on process
/// start-up, so 3 keeps both busy).
const PARALLEL: usize = 3;
/// How long an orphaned lackpy process may take to die before it is a leak.
const LEFTOVER_GRACE: Duration = Duration::from_secs(10);

/// Tools granted when a case does not say otherwise: every file tool, for the
/// widest attack surface.
const DEFAULT_TOOLS: &str = "read_file,find_files,write_file,edit_file";

/// The corpus files, embedded so the test binary needs no path at run time.
/// (`include_str!` takes only a literal, hence a macro.)
macro_rules! corpus_files {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("escapes/", $name, ".toml")))),*]
    };
}
const CORPUS: &[(&str, &str)] = corpus_files![
    "dunder", "builtins", "format", "unicode", "lambda", "syntax", "paths", "bombs", "tools",
    "builders", "glob", "fuzz",
];

/// Placeholders a program may contain; see the corpus README.
const PLACEHOLDERS: &[&str] = &["@CANARY@", "@TMP@", "@WS@", "@PWN@"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Expect {
    Validation,
    Runtime,
    Limit,
    Tool,
    OkHarmless,
}

impl Expect {
    fn exit_code(self) -> i32 {
        match self {
            Expect::Validation => 2,
            Expect::Runtime | Expect::Limit | Expect::Tool => 1,
            Expect::OkHarmless => 0,
        }
    }

    fn from_json_kind(kind: &str) -> Option<Expect> {
        Some(match kind {
            "validation" => Expect::Validation,
            "runtime" => Expect::Runtime,
            "limit" => Expect::Limit,
            "tool" => Expect::Tool,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Gen {
    before: String,
    after: String,
    count: usize,
    /// Prefix the k-th `before` with k spaces (deep indentation).
    #[serde(default)]
    indent: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) program: String,
    pub(crate) expect: Expect,
    #[serde(rename = "type")]
    pub(crate) type_name: Option<String>,
    /// Text the JSON error `message` must contain (with `expect`): tells the
    /// interpreter's own limit from the OS backstop that reports the same
    /// kind and type (a `memory` limit hit by `RLIMIT_AS`).
    pub(crate) message: Option<String>,
    #[serde(default)]
    pub(crate) accept: Vec<Expect>,
    pub(crate) tools: Option<String>,
    #[serde(default)]
    pub(crate) forbid: Vec<String>,
    pub(crate) note: String,
    pub(crate) gen: Option<Gen>,
    #[serde(default)]
    pub(crate) append_bytes: Vec<u8>,
    /// A known, documented gap (SECURITY.md "Known gaps"): the case's
    /// violations are reported but do not fail the suite; the case passing
    /// does, so the marker goes away with the fix.
    pub(crate) gap: Option<String>,
    /// Why the case is not replayed over MCP (`escapes_corpus_over_mcp`),
    /// e.g. a trace too large for the MCP rendering to answer in time.
    pub(crate) skip_mcp: Option<String>,
    /// The run's wall-clock limit in seconds (`--timeout`), for a case
    /// whose point is another limit and whose many IPC round trips a
    /// loaded machine slows (each hand-over can wait for a time slice).
    pub(crate) timeout: Option<u64>,
    /// Filled in from the file name.
    #[serde(skip)]
    pub(crate) category: String,
}

impl Case {
    fn allowed(&self) -> Vec<Expect> {
        let mut v = vec![self.expect];
        v.extend(self.accept.iter().copied());
        v
    }

    /// The program's bytes with generators applied and placeholders replaced.
    pub(crate) fn source(&self, subst: &[(&str, String)]) -> Vec<u8> {
        let mut text = String::new();
        match &self.gen {
            Some(g) => {
                for k in 0..g.count {
                    if g.indent {
                        text.push_str(&" ".repeat(k));
                    }
                    text.push_str(&g.before);
                }
                if g.indent {
                    text.push_str(&" ".repeat(g.count));
                }
                text.push_str(&self.program);
                for _ in 0..g.count {
                    text.push_str(&g.after);
                }
            }
            None => text.push_str(&self.program),
        }
        for (k, v) in subst {
            if text.contains(k) {
                text = text.replace(k, v);
            }
        }
        let mut bytes = text.into_bytes();
        bytes.extend_from_slice(&self.append_bytes);
        bytes
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CorpusFile {
    case: Vec<Case>,
}

/// Every case of the corpus, in file order.
pub(crate) fn corpus() -> Vec<Case> {
    let mut all = Vec::new();
    for (category, text) in CORPUS {
        let file: CorpusFile =
            toml::from_str(text).unwrap_or_else(|e| panic!("tests/escapes/{category}.toml: {e}"));
        for mut c in file.case {
            c.category = (*category).to_string();
            all.push(c);
        }
    }
    all
}

/// 128 random bits as hex, from the std hasher's per-process random keys
/// mixed with the time (no rand crate needed for a canary).
fn random_hex() -> String {
    let mut out = String::new();
    for i in 0..2u64 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(i);
        h.write_u128(
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        h.write_u32(std::process::id());
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out
}

/// One case's surroundings: `<tmp>/ws` is the workspace, `<tmp>/canary.txt`
/// the secret outside it.
struct Arena {
    dir: tempfile::TempDir,
    ws: PathBuf,
    canary: PathBuf,
    secret: String,
    canary_text: String,
    pwn: String,
    /// The trap symlinks: (path in the workspace, target).
    links: Vec<(&'static str, PathBuf)>,
}

impl Arena {
    fn new() -> Arena {
        let dir = tempfile::Builder::new()
            .prefix("lackpy-escape-")
            .tempdir()
            .expect("tempdir");
        let root = dir.path().to_path_buf();
        let ws = root.join("ws");
        std::fs::create_dir_all(ws.join("sub")).expect("mkdir ws/sub");
        std::fs::create_dir_all(root.join("outside_dir")).expect("mkdir outside_dir");
        std::fs::write(root.join("outside_dir/keep.txt"), "outside\n").expect("write outside");
        let secret = random_hex();
        let canary_text = format!("CANARY {secret}\n");
        let canary = root.join("canary.txt");
        std::fs::write(&canary, &canary_text).expect("write canary");
        std::fs::write(ws.join("a.txt"), "hello\n").expect("write a.txt");
        std::fs::write(ws.join("sub/b.txt"), "inside\n").expect("write b.txt");
        std::fs::write(ws.join("data.json"), "{\"k\": [1, 2]}\n").expect("write data.json");
        let links: Vec<(&'static str, PathBuf)> = vec![
            ("link_canary", canary.clone()),
            ("link_canary_rel", PathBuf::from("../canary.txt")),
            ("link_root", PathBuf::from("/")),
            ("link_up", PathBuf::from("..")),
            ("link_proc", PathBuf::from("/proc/self/environ")),
            ("link_loop", PathBuf::from("link_loop")),
            ("link_in", PathBuf::from("sub")),
            ("sub/link_up2", PathBuf::from("../../canary.txt")),
        ];
        for (name, target) in &links {
            std::os::unix::fs::symlink(target, ws.join(name)).expect("symlink");
        }
        let fifo = ws.join("fifo");
        let made = Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(made, "mkfifo {} failed", fifo.display());
        let pwn = format!("lackpy-pwned-{}", &random_hex()[..16]);
        Arena {
            dir,
            ws,
            canary,
            secret,
            canary_text,
            pwn,
            links,
        }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn substitutions(&self) -> Vec<(&'static str, String)> {
        vec![
            ("@CANARY@", self.canary.display().to_string()),
            ("@TMP@", self.root().display().to_string()),
            ("@WS@", self.ws.display().to_string()),
            ("@PWN@", self.pwn.clone()),
        ]
    }

    /// Everything under the tempdir except the workspace: path → description.
    fn snapshot_outside(&self) -> BTreeMap<PathBuf, String> {
        let mut out = BTreeMap::new();
        let mut stack = vec![self.root().to_path_buf()];
        while let Some(dir) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in rd.flatten() {
                let p = entry.path();
                if p == self.ws {
                    continue;
                }
                let Ok(md) = std::fs::symlink_metadata(&p) else {
                    continue;
                };
                let mtime = md
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok());
                out.insert(
                    p.clone(),
                    format!("{:?} len={} mtime={mtime:?}", md.file_type(), md.len()),
                );
                if md.is_dir() {
                    stack.push(p);
                }
            }
        }
        out
    }

    /// Run records (JSON lines with a `run_id`) in `.lackpy/traces/*.jsonl`.
    fn trace_records(&self) -> Vec<serde_json::Value> {
        let dir = self.ws.join(".lackpy/traces");
        let Ok(rd) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for e in rd.flatten() {
            let is_jsonl = e.path().extension().is_some_and(|x| x == "jsonl");
            let Ok(text) = std::fs::read_to_string(e.path()) else {
                continue;
            };
            if !is_jsonl {
                continue;
            }
            for line in text.lines() {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                    if v.get("run_id").is_some() {
                        out.push(v);
                    }
                }
            }
        }
        out
    }

    /// Regular files of the workspace (traces included), never following
    /// symlinks and never opening the fifo.
    fn workspace_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        let mut stack = vec![self.ws.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in rd.flatten() {
                let p = entry.path();
                let Ok(md) = std::fs::symlink_metadata(&p) else {
                    continue;
                };
                if md.is_dir() {
                    stack.push(p);
                } else if md.is_file() {
                    files.push(p);
                }
            }
        }
        files
    }
}

/// What one run produced.
struct Ran {
    status: Option<i32>,
    signal: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    elapsed: Duration,
    timed_out: bool,
    pid: u32,
}

fn read_capped(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        // Keep at most 64 MiB; drain the rest so the child never blocks on a full pipe.
        const CAP: usize = 64 << 20;
        let mut kept = Vec::new();
        let mut buf = [0u8; 65536];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if kept.len() < CAP {
                        kept.extend_from_slice(&buf[..n.min(CAP - kept.len())]);
                    }
                }
            }
        }
        kept
    })
}

/// Run `lackpy` with `args` in its own process group, `stdin` fed from a thread,
/// killed with its whole group after `deadline`.
fn run_bounded(args: &[&str], stdin: Vec<u8>, cwd: &Path, deadline: Duration) -> Ran {
    use std::os::unix::process::ExitStatusExt;
    let start = Instant::now();
    let mut cmd = util::lackpy();
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().expect("spawn lackpy");
    let pid = child.id();
    let mut sin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let _ = sin.write_all(&stdin);
    });
    let out = read_capped(child.stdout.take().expect("stdout"));
    let err = read_capped(child.stderr.take().expect("stderr"));
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {}
            Err(e) => panic!("wait: {e}"),
        }
        if start.elapsed() > deadline {
            timed_out = true;
            kill_group(pid);
            let _ = child.kill(); // in case `kill` is missing
            break child.wait().expect("wait after kill");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    if timed_out {
        // The pipes may be held open by leftover group members; killing the
        // group above closes them.
        kill_group(pid);
    }
    let _ = writer.join();
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    Ran {
        status: status.code(),
        signal: status.signal(),
        stdout,
        stderr,
        elapsed,
        timed_out,
        pid,
    }
}

fn kill_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// `/proc/PID/stat` fields after the command name: (comm, state, ppid, pgrp).
fn proc_stat(pid: u32) -> Option<(String, char, u32, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let mut rest = text.get(close + 2..)?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    let pgrp = rest.next()?.parse().ok()?;
    Some((comm, state, ppid, pgrp))
}

fn all_pids() -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
        .collect()
}

/// Live (non-zombie) processes still in process group `pgid`.
fn group_members(pgid: u32) -> Vec<(u32, String)> {
    all_pids()
        .into_iter()
        .filter_map(|p| match proc_stat(p) {
            Some((comm, state, _, pg)) if pg == pgid && state != 'Z' => Some((p, comm)),
            _ => None,
        })
        .collect()
}

/// Processes that run the lackpy binary (by command name or executable).
pub(crate) fn lackpy_processes() -> HashMap<u32, String> {
    let bin = util::bin();
    all_pids()
        .into_iter()
        .filter_map(|p| {
            let (comm, state, _, _) = proc_stat(p)?;
            if state == 'Z' {
                return None;
            }
            let exe = std::fs::read_link(format!("/proc/{p}/exe")).ok();
            let is_ours = comm.starts_with("lackpy") || exe.as_deref() == Some(bin.as_path());
            is_ours.then_some((p, comm))
        })
        .collect()
}

/// True when `pid` was orphaned (re-parented to init): what a worker that
/// outlived its supervisor looks like. Processes of other programs on a
/// shared machine keep their parents, so they are not mistaken for ours.
fn orphaned(pid: u32) -> bool {
    matches!(proc_stat(pid), Some((_, _, ppid, _)) if ppid <= 1)
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

fn excerpt(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let s: String = s.chars().take(300).collect();
    s.replace('\n', "\\n")
}

impl Case {
    /// The comma-separated tools the case is run with.
    fn tool_list(&self) -> String {
        self.tools
            .clone()
            .unwrap_or_else(|| DEFAULT_TOOLS.to_string())
    }
}

/// `lackpy CMD - --json --workspace WS --tools TOOLS`: the program on stdin.
fn cli_args<'a>(cmd: &'a str, ws: &'a str, tools: &'a str) -> [&'a str; 7] {
    [cmd, "-", "--json", "--workspace", ws, "--tools", tools]
}

/// Lackpy processes started since `before` and orphaned: what a run left behind.
///
/// Other tests in this binary run beside the corpus, and a supervisor of
/// theirs that exits leaves its zygote and pooled workers orphaned for the
/// moment they take to die of PR_SET_PDEATHSIG. So an orphan counts only when
/// it is still there, still orphaned, after a grace period: a real leak
/// outlives it, a neighbour's teardown does not.
fn leftover_processes(before: &HashSet<u32>) -> Vec<(u32, String)> {
    let orphans = || -> HashMap<u32, String> {
        lackpy_processes()
            .into_iter()
            .filter(|(p, _)| !before.contains(p) && orphaned(*p))
            .collect()
    };
    let first = orphans();
    let grace = Instant::now();
    let mut still = first.clone();
    while !still.is_empty() && grace.elapsed() < LEFTOVER_GRACE {
        std::thread::sleep(Duration::from_millis(100));
        let now = orphans();
        still.retain(|p, _| now.contains_key(p));
    }
    still
        .into_iter()
        .map(|(p, comm)| {
            let state = proc_stat(p).map_or('?', |(_, s, _, _)| s);
            let exe = std::fs::read_link(format!("/proc/{p}/exe"))
                .map_or_else(|e| format!("({e})"), |x| x.display().to_string());
            (p, format!("{comm} [{state}] exe {exe}: {}", cmdline(p)))
        })
        .collect()
}

/// Fails with every disagreement in `bad` (each `"case name: ..."`) of a
/// check of `cases` against `checker`; a known gap (SECURITY.md) is
/// reported, not failed: the end-to-end runner is the one that insists a
/// gap is removed once fixed.
fn assert_agrees(cases: &[Case], bad: Vec<String>, checker: &str) {
    let gaps: HashSet<&str> = cases
        .iter()
        .filter(|c| c.gap.is_some())
        .map(|c| c.name.as_str())
        .collect();
    let (known, bad): (Vec<String>, Vec<String>) = bad
        .into_iter()
        .partition(|b| gaps.contains(b.split(':').next().unwrap_or("")));
    if !known.is_empty() {
        eprintln!("known gaps at {checker}:\n{}", known.join("\n"));
    }
    assert!(
        bad.is_empty(),
        "{} of {} cases disagree with {checker}:\n{}",
        bad.len(),
        cases.len(),
        bad.join("\n")
    );
}

/// Run one case and return its violations (empty = pass) and the outcome seen.
fn run_case(case: &Case) -> (Vec<String>, String, Duration) {
    let arena = Arena::new();
    let before = arena.snapshot_outside();
    let source = case.source(&arena.substitutions());
    let ws = arena.ws.display().to_string();
    let tools = case.tool_list();
    let mut args = cli_args("run", &ws, &tools).to_vec();
    let timeout = case.timeout.map(|t| t.to_string());
    if let Some(t) = &timeout {
        args.extend(["--timeout", t.as_str()]);
    }
    let ran = run_bounded(&args, source, &arena.ws, HARD_DEADLINE);
    let mut v = Vec::new();

    // 1. Bounded.
    if ran.timed_out {
        v.push(format!("did not end within {HARD_DEADLINE:?} (killed)"));
    }
    // 6. No process left behind in the run's group.
    let mut members = group_members(ran.pid);
    let grace = Instant::now();
    while !members.is_empty() && grace.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(50));
        members = group_members(ran.pid);
    }
    if !members.is_empty() {
        v.push(format!(
            "processes left behind in the run's group: {members:?}"
        ));
        kill_group(ran.pid);
    }
    // 2 + 3. Exit status and outcome.
    let json: Option<serde_json::Value> = serde_json::from_slice(&ran.stdout).ok();
    let mut seen = String::from("?");
    match (&json, ran.status) {
        (_, None) => v.push(format!("killed by signal {:?}", ran.signal)),
        (None, Some(code)) => v.push(format!(
            "exit {code}, stdout is not one JSON object: {} | stderr: {}",
            excerpt(&ran.stdout),
            excerpt(&ran.stderr)
        )),
        (Some(j), Some(code)) => {
            let ok = j.get("ok").and_then(serde_json::Value::as_bool);
            let err = j.get("error");
            let kind = err
                .and_then(|e| e.get("kind"))
                .and_then(serde_json::Value::as_str);
            let ty = err
                .and_then(|e| e.get("type"))
                .and_then(serde_json::Value::as_str)
                .unwrap_or("");
            let msg = err
                .and_then(|e| e.get("message"))
                .and_then(serde_json::Value::as_str)
                .unwrap_or("");
            let got = match (ok, kind) {
                (Some(true), _) => Some(Expect::OkHarmless),
                (Some(false), Some(k)) => Expect::from_json_kind(k),
                _ => None,
            };
            seen = match got {
                Some(Expect::OkHarmless) => "ok".to_string(),
                _ => format!("{}/{ty}", kind.unwrap_or("?")),
            };
            match got {
                None => v.push(format!(
                    "exit {code}, unexpected outcome ok={ok:?} kind={kind:?} type={ty:?}: {}",
                    excerpt(msg.as_bytes())
                )),
                Some(g) => {
                    if g.exit_code() != code {
                        v.push(format!(
                            "exit {code} does not match outcome {seen} (want exit {})",
                            g.exit_code()
                        ));
                    }
                    if !case.allowed().contains(&g) {
                        v.push(format!(
                            "expected {:?}{}, got {seen}: {}",
                            case.expect,
                            if case.accept.is_empty() {
                                String::new()
                            } else {
                                format!(" (or {:?})", case.accept)
                            },
                            excerpt(msg.as_bytes())
                        ));
                    } else if g == case.expect {
                        if let Some(want) = &case.type_name {
                            if want != ty {
                                v.push(format!(
                                    "expected type {want}, got {seen}: {}",
                                    excerpt(msg.as_bytes())
                                ));
                            }
                        }
                        if let Some(want) = &case.message {
                            if !msg.contains(want.as_str()) {
                                v.push(format!(
                                    "expected a message containing {want:?}, got {seen}: {}",
                                    excerpt(msg.as_bytes())
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    if !matches!(ran.status, Some(0..=2)) && ran.status.is_some() {
        v.push(format!(
            "exit status {:?} is not 0/1/2 (stderr: {})",
            ran.status,
            excerpt(&ran.stderr)
        ));
    }
    // Case-specific strings that must not be printed (e.g. a listing through a symlink out).
    for f in &case.forbid {
        if contains(&ran.stdout, f.as_bytes()) {
            v.push(format!(
                "stdout contains forbidden {f:?}: {}",
                excerpt(&ran.stdout)
            ));
        }
    }
    // 4. The canary's secret never leaks.
    let secret = arena.secret.as_bytes();
    if contains(&ran.stdout, secret) {
        v.push("CANARY LEAKED on stdout".to_string());
    }
    if contains(&ran.stderr, secret) {
        v.push("CANARY LEAKED on stderr".to_string());
    }
    for f in arena.workspace_files() {
        if let Ok(bytes) = std::fs::read(&f) {
            if contains(&bytes, secret) {
                v.push(format!("CANARY LEAKED into {}", f.display()));
            }
        }
    }
    // 7. The run is traced (guarantee 3): exactly one run record in the
    // workspace's traces, listing as many tool calls as the JSON reports.
    if !ran.timed_out {
        let records = arena.trace_records();
        match records.as_slice() {
            [one] => {
                let traced = one
                    .get("calls")
                    .and_then(serde_json::Value::as_array)
                    .map(Vec::len);
                let reported = json
                    .as_ref()
                    .and_then(|j| j.get("trace"))
                    .and_then(serde_json::Value::as_array)
                    .map(Vec::len);
                if reported.is_some() && traced != reported {
                    v.push(format!(
                        "trace file lists {traced:?} calls, the JSON reports {reported:?}"
                    ));
                }
            }
            other => v.push(format!(
                "expected one run record in .lackpy/traces, found {}",
                other.len()
            )),
        }
    }
    // 8. The trap symlinks are intact (never replaced by a file or retargeted).
    for (name, target) in &arena.links {
        match std::fs::read_link(arena.ws.join(name)) {
            Ok(t) if t == *target => {}
            other => v.push(format!(
                "trap symlink {name} (-> {}) was changed: now {other:?}",
                target.display()
            )),
        }
    }
    // 5. Nothing outside the workspace changed.
    match std::fs::read_to_string(&arena.canary) {
        Ok(t) if t == arena.canary_text => {}
        other => v.push(format!("canary changed: {other:?}")),
    }
    let after = arena.snapshot_outside();
    if after != before {
        let added: Vec<_> = after.keys().filter(|k| !before.contains_key(*k)).collect();
        let removed: Vec<_> = before.keys().filter(|k| !after.contains_key(*k)).collect();
        let changed: Vec<_> = after
            .iter()
            .filter(|(k, d)| before.get(*k).is_some_and(|b| b != *d))
            .map(|(k, _)| k)
            .collect();
        v.push(format!(
            "outside the workspace: added {added:?} removed {removed:?} changed {changed:?}"
        ));
    }
    for p in [
        PathBuf::from("/tmp").join(&arena.pwn),
        PathBuf::from("/").join(&arena.pwn),
    ] {
        if std::fs::symlink_metadata(&p).is_ok() {
            v.push(format!("created {}", p.display()));
            let _ = std::fs::remove_file(&p);
        }
    }
    (v, seen, ran.elapsed)
}

struct Report {
    name: String,
    category: String,
    violations: Vec<String>,
    seen: String,
    elapsed: Duration,
}

#[test]
fn corpus_is_well_formed() {
    let cases = corpus();
    assert!(
        cases.len() >= 220,
        "the corpus must hold at least 220 cases, has {}",
        cases.len()
    );
    let mut names = HashSet::new();
    let mut per_category: BTreeMap<String, usize> = BTreeMap::new();
    for c in &cases {
        assert!(
            names.insert(c.name.clone()),
            "duplicate case name {}",
            c.name
        );
        assert!(!c.note.trim().is_empty(), "{}: empty note", c.name);
        assert!(
            !c.accept.contains(&c.expect),
            "{}: accept repeats expect",
            c.name
        );
        if c.type_name.is_some() {
            assert_ne!(
                c.expect,
                Expect::OkHarmless,
                "{}: a type on an ok case",
                c.name
            );
        }
        let text = String::from_utf8_lossy(&c.source(&[])).into_owned();
        for token in text.split('@').skip(1).step_by(1) {
            let word: String = token
                .chars()
                .take_while(|ch| ch.is_ascii_uppercase())
                .collect();
            let is_token = !word.is_empty() && token[word.len()..].starts_with('@');
            if is_token {
                let p = format!("@{word}@");
                assert!(
                    PLACEHOLDERS.contains(&p.as_str()),
                    "{}: unknown placeholder {p}",
                    c.name
                );
            }
        }
        *per_category.entry(c.category.clone()).or_default() += 1;
    }
    for (cat, _) in CORPUS {
        assert!(
            per_category.get(*cat).copied().unwrap_or(0) > 0,
            "category {cat} is empty"
        );
    }
}

/// The policy validator, in-process, agrees with every case's expectation
/// about validation: the first layer holds on its own (defence in depth means
/// each layer is tested alone, not only the stack as a whole).
#[test]
fn corpus_policy_validator_agrees() {
    use lackpy_policy::{Grade, Namespace, ToolEntry};
    let arena = Arena::new();
    let subst = arena.substitutions();
    let limits = lackpy_policy::Limits::default();
    let mut bad = Vec::new();
    let cases = corpus();
    for c in &cases {
        let ns = Namespace {
            tools: c
                .tool_list()
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|name| ToolEntry::new(name, &[], Grade::default()))
                .collect(),
        };
        let allowed = c.allowed();
        let may_fail = allowed.contains(&Expect::Validation);
        let may_pass = allowed.iter().any(|a| *a != Expect::Validation);
        let src = c.source(&subst);
        let name = c.name.clone();
        let limits = limits.clone();
        let r = std::thread::Builder::new()
            .stack_size(8 << 20)
            .spawn(move || lackpy_policy::lang::validate_bytes(&src, &ns, &limits).map(|_| ()))
            .expect("spawn")
            .join();
        match r {
            Err(_) => bad.push(format!("{name}: the validator panicked")),
            Ok(Ok(())) if !may_pass => bad.push(format!("{name}: validated, but must be refused")),
            Ok(Err(errs)) if !may_fail => bad.push(format!(
                "{name}: refused, but must validate: {:?}",
                errs.iter()
                    .map(|e| format!("{} {}", e.type_name, e.message))
                    .collect::<Vec<_>>()
            )),
            Ok(Err(errs)) => {
                if let (Expect::Validation, Some(want)) = (c.expect, &c.type_name) {
                    if !errs.iter().any(|e| &e.type_name == want) {
                        bad.push(format!(
                            "{name}: expected type {want}, got {:?}",
                            errs.iter().map(|e| &e.type_name).collect::<Vec<_>>()
                        ));
                    }
                }
            }
            Ok(Ok(())) => {}
        }
    }
    assert_agrees(&cases, bad, "the policy validator");
}

/// The validator alone (through `lackpy validate`, no jail) agrees with every
/// case's expectation about validation: fast feedback while the runner waits
/// for `lackpy run`, and a check that the validator stands on its own.
#[test]
fn corpus_validator_agrees() {
    let cases = corpus();
    let arena = Arena::new();
    let subst = arena.substitutions();
    let ws = arena.ws.display().to_string();
    let mut bad = Vec::new();
    for c in &cases {
        let tools = c.tool_list();
        let args = cli_args("validate", &ws, &tools);
        let ran = run_bounded(&args, c.source(&subst), &arena.ws, HARD_DEADLINE);
        let allowed = c.allowed();
        let may_fail = allowed.contains(&Expect::Validation);
        let may_pass = allowed.iter().any(|a| *a != Expect::Validation);
        let json: Option<serde_json::Value> = serde_json::from_slice(&ran.stdout).ok();
        let ok = json
            .as_ref()
            .and_then(|j| j.get("ok"))
            .and_then(serde_json::Value::as_bool);
        let ty = json
            .as_ref()
            .and_then(|j| j.pointer("/error/type"))
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .to_string();
        match (ran.status, ok) {
            (Some(0), Some(true)) if !may_pass => {
                bad.push(format!("{}: validated, but must be refused", c.name))
            }
            (Some(2), Some(false)) if !may_fail => {
                bad.push(format!("{}: refused ({ty}), but must validate", c.name))
            }
            (Some(2), Some(false)) => {
                if let (Expect::Validation, Some(want)) = (c.expect, &c.type_name) {
                    if *want != ty {
                        bad.push(format!("{}: expected type {want}, got {ty}", c.name));
                    }
                }
            }
            (Some(0), Some(true)) => {}
            (status, _) => bad.push(format!(
                "{}: exit {status:?} ({}) {}",
                c.name,
                if ran.timed_out { "timed out" } else { "" },
                excerpt(&ran.stderr)
            )),
        }
    }
    assert_agrees(&cases, bad, "`lackpy validate`");
}

#[test]
fn escapes_corpus() {
    let cases = Arc::new(corpus());
    let procs_before: HashSet<u32> = lackpy_processes().into_keys().collect();
    let next = Arc::new(AtomicUsize::new(0));
    let reports = Arc::new(Mutex::new(Vec::<Report>::new()));
    let started = Instant::now();
    let workers: Vec<_> = (0..PARALLEL)
        .map(|_| {
            let (cases, next, reports) =
                (Arc::clone(&cases), Arc::clone(&next), Arc::clone(&reports));
            std::thread::spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(case) = cases.get(i) else { break };
                let (violations, seen, elapsed) = run_case(case);
                let r = Report {
                    name: case.name.clone(),
                    category: case.category.clone(),
                    violations,
                    seen,
                    elapsed,
                };
                if let Ok(mut g) = reports.lock() {
                    g.push(r);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("runner thread");
    }
    let reports = match Arc::try_unwrap(reports) {
        Ok(m) => m.into_inner().unwrap_or_default(),
        Err(_) => panic!("reports still shared"),
    };
    // Leftover lackpy processes that no live test owns.
    std::thread::sleep(Duration::from_millis(200));
    let leftovers = leftover_processes(&procs_before);

    // Per-category table.
    let mut table: BTreeMap<&str, (usize, usize, BTreeMap<String, usize>)> = BTreeMap::new();
    for r in &reports {
        let e = table.entry(r.category.as_str()).or_default();
        e.0 += 1;
        if r.violations.is_empty() {
            e.1 += 1;
        }
        let outcome = r.seen.split('/').next().unwrap_or("?").to_string();
        *e.2.entry(outcome).or_default() += 1;
    }
    let mut summary = format!(
        "\nescape corpus: {} cases in {:.1?}\n| category | cases | pass | outcomes |\n|---|---:|---:|---|\n",
        reports.len(),
        started.elapsed()
    );
    for (cat, (n, pass, outcomes)) in &table {
        let o: Vec<String> = outcomes.iter().map(|(k, v)| format!("{k} {v}")).collect();
        summary.push_str(&format!("| {cat} | {n} | {pass} | {} |\n", o.join(", ")));
    }
    let mut slow: Vec<&Report> = reports.iter().collect();
    slow.sort_by_key(|r| std::cmp::Reverse(r.elapsed));
    summary.push_str("slowest: ");
    for r in slow.iter().take(5) {
        summary.push_str(&format!("{} {:.1?}; ", r.name, r.elapsed));
    }
    eprintln!("{summary}");

    let gaps: HashMap<&str, &str> = cases
        .iter()
        .filter_map(|c| c.gap.as_deref().map(|g| (c.name.as_str(), g)))
        .collect();
    let mut failures = Vec::new();
    let mut known = Vec::new();
    for r in &reports {
        match (gaps.get(r.name.as_str()), r.violations.is_empty()) {
            (None, true) => {}
            (None, false) => failures.push(format!("[{}] {}: {}", r.category, r.name, r.violations.join("; "))),
            (Some(g), false) => known.push(format!("[{}] {} (known gap: {g}): {}", r.category, r.name, r.violations.join("; "))),
            (Some(_), true) => failures.push(format!(
                "[{}] {}: marked as a known gap but passes now; remove `gap` from the case and from SECURITY.md",
                r.category, r.name
            )),
        }
    }
    if !known.is_empty() {
        eprintln!("{} known gap(s):\n{}", known.len(), known.join("\n"));
    }
    failures.sort();
    if !leftovers.is_empty() {
        failures.push(format!(
            "lackpy processes left behind after the suite: {leftovers:?}"
        ));
    }
    assert!(
        failures.is_empty(),
        "{summary}\n{} violation(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Profile and tool names come from untrusted MCP clients too: a name is a
/// name, never a path. Kits planted outside the workspace must not load.
#[test]
fn hostile_profile_and_tool_names() {
    let arena = Arena::new();
    let kit = arena.root().join("evil.kit");
    std::fs::write(&kit, "read_file\nwrite_file\n").expect("write kit");
    let ws = arena.ws.display().to_string();
    let evil_abs = arena.root().join("evil").display().to_string();
    let program = b"write_file(\"pwned.txt\", \"x\")".to_vec();
    let mut bad = Vec::new();
    let selections: Vec<Vec<String>> = vec![
        vec!["--profile".into(), "../../evil".into()],
        vec!["--profile".into(), "../evil".into()],
        vec!["--profile".into(), evil_abs.clone()],
        vec!["--profile".into(), format!("{evil_abs}.kit")],
        vec!["--profile".into(), "evil\0".into()],
        vec!["--profile".into(), "x".repeat(5000)],
        vec!["--tools".into(), "../../evil".into()],
        vec!["--tools".into(), "read_file,__import__".into()],
        vec!["--tools".into(), "read_file,/bin/sh".into()],
        vec!["--tools".into(), "write_file\u{ff3f}".into()],
    ];
    for sel in &selections {
        if sel.iter().any(|s| s.contains('\0')) {
            continue; // argv cannot hold NUL; covered by the MCP tests
        }
        let mut args: Vec<&str> = vec!["run", "-", "--json", "--workspace", ws.as_str()];
        args.extend(sel.iter().map(String::as_str));
        let ran = run_bounded(&args, program.clone(), &arena.ws, HARD_DEADLINE);
        let shown: Vec<String> = sel.iter().map(|s| s.chars().take(40).collect()).collect();
        if !matches!(ran.status, Some(2 | 3)) {
            bad.push(format!(
                "{shown:?}: exit {:?} (want 3, or 2 when write_file is unknown)",
                ran.status
            ));
        }
        if arena.ws.join("pwned.txt").exists() {
            bad.push(format!(
                "{shown:?}: the planted kit was loaded (pwned.txt written)"
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The human-readable output of `lackpy run` shows a program's `print`
/// output to the operator's terminal: control characters must not reach it
/// raw (OSC title/clipboard sequences, screen clears, fake prompts).
///
/// Known gap (SECURITY.md): they are printed raw today. The test pins that
/// so it fails once fixed; then flip it to assert no raw ESC/BEL bytes.
#[test]
fn terminal_escapes_in_human_output() {
    const GAP: bool = false;
    let arena = Arena::new();
    let ws = arena.ws.display().to_string();
    let program = b"print(\"A\\x1b]0;title\\x07B\\x1b[2J\")\n\"\\x1b[31m\"".to_vec();
    let args = [
        "run",
        "-",
        "--workspace",
        ws.as_str(),
        "--tools",
        "read_file",
    ];
    let ran = run_bounded(&args, program, &arena.ws, HARD_DEADLINE);
    assert_eq!(ran.status, Some(0), "stderr: {}", excerpt(&ran.stderr));
    let raw = ran.stdout.iter().any(|b| *b == 0x1b || *b == 0x07);
    if GAP {
        assert!(raw, "control characters no longer reach the terminal raw: the gap is fixed; set GAP = false and remove it from SECURITY.md");
        eprintln!("known gap: `lackpy run` prints a program's control characters raw");
    } else {
        assert!(
            !raw,
            "raw control characters on the operator's terminal: {}",
            excerpt(&ran.stdout)
        );
    }
}

/// The escape corpus through the other untrusted front door: an MCP client
/// calling `run_program` on one `lackpy mcp` server. One server and one
/// workspace for all cases (state carries over between cases, so only the
/// categories whose outcome cannot depend on earlier writes are checked for
/// their expected kind); every case is checked for the security invariants:
/// the canary never in any response, nothing outside the workspace changed,
/// the server alive and answering afterwards, no process left behind.
#[test]
fn escapes_corpus_over_mcp() {
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::TokioChildProcess;
    use rmcp::ServiceExt;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let arena = Arena::new();
    let before = arena.snapshot_outside();
    let procs_before: HashSet<u32> = lackpy_processes().into_keys().collect();
    let subst = arena.substitutions();
    let cases: Vec<Case> = corpus()
        .into_iter()
        .filter(|c| {
            c.gen.is_none() && c.append_bytes.is_empty() && c.gap.is_none() && c.skip_mcp.is_none()
        })
        .collect();
    let bad = rt.block_on(async {
        let mut cmd = tokio::process::Command::new(util::bin());
        cmd.arg("mcp").arg("--workspace").arg(&arena.ws);
        cmd.env_remove("LACKPY_CONFIG").env_remove("LACKPY_LOG");
        cmd.env("XDG_CONFIG_HOME", "/nonexistent-lackpy-test-config");
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn lackpy mcp");
        let client = ().serve(transport).await.expect("MCP initialize");
        let peer = client.peer().clone();
        let sem = Arc::new(tokio::sync::Semaphore::new(PARALLEL));
        let mut set = tokio::task::JoinSet::new();
        for c in cases.iter().cloned() {
            let (peer, sem) = (peer.clone(), Arc::clone(&sem));
            let program = String::from_utf8_lossy(&c.source(&subst)).into_owned();
            let tools: Vec<String> = c.tool_list().split(',').map(str::to_string).collect();
            set.spawn(async move {
                let _permit = sem.acquire().await;
                let mut params = serde_json::Map::new();
                params.insert("program".into(), serde_json::Value::String(program));
                params.insert("tools".into(), serde_json::json!(tools));
                let call = peer
                    .call_tool(CallToolRequestParams::new("run_program").with_arguments(params));
                let r = tokio::time::timeout(HARD_DEADLINE, call).await;
                (c, r)
            });
        }
        let mut bad = Vec::new();
        while let Some(joined) = set.join_next().await {
            let Ok((c, r)) = joined else {
                bad.push("a call task panicked".to_string());
                continue;
            };
            let r = match r {
                Err(_) => {
                    bad.push(format!("{}: no answer within {HARD_DEADLINE:?}", c.name));
                    continue;
                }
                Ok(Err(e)) => {
                    bad.push(format!("{}: tools/call failed: {e}", c.name));
                    continue;
                }
                Ok(Ok(r)) => r,
            };
            let all = serde_json::to_string(&r).unwrap_or_default();
            if all.contains(&arena.secret) {
                bad.push(format!("{}: CANARY LEAKED in the MCP response", c.name));
            }
            let Some(s) = r.structured_content.as_ref() else {
                bad.push(format!("{}: no structuredContent", c.name));
                continue;
            };
            let ok = s.get("ok").and_then(serde_json::Value::as_bool);
            if ok.map(|o| !o) != r.is_error {
                bad.push(format!(
                    "{}: isError {:?} disagrees with ok {ok:?}",
                    c.name, r.is_error
                ));
            }
            let kind = s.pointer("/error/kind").and_then(serde_json::Value::as_str);
            let got = match (ok, kind) {
                (Some(true), _) => Some(Expect::OkHarmless),
                (_, Some(k)) => Expect::from_json_kind(k),
                _ => None,
            };
            // These categories write into the shared workspace, so their
            // outcome may depend on what other cases left there (`glob`:
            // code intelligence indexes every case's Python files).
            let stateless = !matches!(c.category.as_str(), "paths" | "tools" | "glob");
            match got {
                None => bad.push(format!(
                    "{}: outcome ok={ok:?} kind={kind:?} error={:?}",
                    c.name,
                    s.get("error")
                )),
                Some(g) if stateless && !c.allowed().contains(&g) => {
                    bad.push(format!("{}: expected {:?}, got {g:?}", c.name, c.expect))
                }
                Some(_) => {}
            }
        }
        // The server survives everything and still answers.
        let alive = peer
            .call_tool(CallToolRequestParams::new("list_profiles"))
            .await;
        if alive.is_err() {
            bad.push("the server no longer answers after the corpus".to_string());
        }
        let _ = client.cancel().await;
        bad
    });
    let mut bad = bad;
    match std::fs::read_to_string(&arena.canary) {
        Ok(t) if t == arena.canary_text => {}
        other => bad.push(format!("canary changed: {other:?}")),
    }
    if arena.snapshot_outside() != before {
        bad.push("something outside the workspace was created or changed".to_string());
    }
    for f in arena.workspace_files() {
        if std::fs::read(&f).is_ok_and(|b| contains(&b, arena.secret.as_bytes())) {
            bad.push(format!("CANARY LEAKED into {}", f.display()));
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let leftovers = leftover_processes(&procs_before);
    if !leftovers.is_empty() {
        bad.push(format!("lackpy processes left behind: {leftovers:?}"));
    }
    assert!(
        bad.is_empty(),
        "{} violation(s) over MCP:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
