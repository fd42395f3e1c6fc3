//! Differential conformance suite: every program in `tests/conformance/`
//! runs under CPython 3.11 (through `tests/conformance/run_cpython.py`, with
//! shim tools with the semantics of the real ones) and under lackpy's interpreter, and the
//! two must agree on the repr of the value, the captured stdout and the
//! exception type (and message, unless the program says `# message: any`),
//! the error's kind (`runtime`, or `tool` for tool failures) and its line
//! (the innermost traceback frame of the program). The value itself must
//! also have the same shape as `wire::Data` (tuple vs list, int vs bool,
//! big ints, floats bit for bit; sets without order).
//!
//! Expected outputs are never written down: python3 is asked at test time.
//!
//! Program annotations (comment lines anywhere in the file):
//! - `# Raise=TypeError` — the program must raise (under CPython: that type).
//!   Programs named `raise__*` must raise too.
//! - `# message: any` — compare only the exception type, not its message.
//! - `# expect-difference: <reason>` — a deliberate difference listed in
//!   `tests/conformance/DIFFERENCES.md`; not compared with CPython, unless the
//!   program also has `# lackpy-repr: <repr>`, in which case lackpy's repr
//!   must equal that text (and stdout must still equal CPython's).
//! - `# xfail: <reason>` — a known interpreter bug: the comparison must
//!   fail (strictly: once it passes, the test fails until the marker goes).
//!
//! `CONFORMANCE_FILTER=substr` restricts every test here to programs whose
//! name contains `substr`; `CONFORMANCE_DIR=dir` reads the programs from
//! `dir` instead of `tests/conformance/` (scratch programs). The reference is CPython 3.11: `python3.11` if
//! present, else `python3` (which must then be 3.11), or the interpreter
//! named by `CONFORMANCE_PYTHON`.
//!
//! Tool-using programs get a fresh copy of `tests/conformance/fixture_ws/`
//! per program and per runner, so writes never dirty the fixture.

use lackpy_policy::wire::{Data, ErrorKind, Limits, ToolFailure};
use lackpy_policy::{validate, Grade, Namespace, ToolEntry};
use lackpy_worker::interp::{
    run_source, set_stack_budget, Kwargs, Output, ToolHost, WORKER_STACK_BUDGET,
};
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// The tools every corpus program may call (besides the builtins).
const TOOLS: [&str; 4] = ["read_file", "find_files", "write_file", "edit_file"];

/// Error types of tool failures (supervisor/README.md); lackpy reports them with kind `tool`.
const TOOL_ERROR_TYPES: [&str; 8] = [
    "PathOutsideWorkspace",
    "FileNotFound",
    "IsADirectory",
    "NotUtf8",
    "TooLarge",
    "BadArgument",
    "ToolFailed",
    "Timeout",
];

/// Minimum corpus sizes the issue asks for.
const MIN_SUCCESS: usize = 320;
const MIN_RAISE: usize = 70;

/// How long one program may run under the interpreter before it is reported
/// as hung. Generous: the default wall-clock limit is 10 s.
const PER_PROGRAM_TIMEOUT: Duration = Duration::from_secs(30);

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance")
}

/// Where the programs are read from: `tests/conformance/`, or the directory
/// named by `CONFORMANCE_DIR` (scratch programs while hunting differences;
/// the fixture and `run_cpython.py` still come from the corpus).
fn programs_dir() -> PathBuf {
    match std::env::var_os("CONFORMANCE_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => corpus_dir(),
    }
}

/// One corpus program and its annotations.
#[derive(Debug, Clone)]
struct Case {
    name: String,
    source: String,
    /// Must raise: a `raise__` name or a `# Raise=` line.
    must_raise: bool,
    /// The type named by `# Raise=`, if any.
    raise_type: Option<String>,
    message_any: bool,
    expect_difference: Option<String>,
    lackpy_repr: Option<String>,
    /// A known interpreter bug (`# xfail: <reason>`): the comparison must fail.
    xfail: Option<String>,
    uses_tools: bool,
}

fn annotation<'a>(source: &'a str, prefix: &str) -> Option<&'a str> {
    source
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(prefix))
        .map(str::trim)
}

fn load_corpus() -> Vec<Case> {
    let filter = std::env::var("CONFORMANCE_FILTER").unwrap_or_default();
    let dir = programs_dir();
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "py")
                && p.file_stem()
                    .is_some_and(|s| s.to_string_lossy().contains("__"))
        })
        .collect();
    names.sort();
    let mut cases = Vec::new();
    for path in names {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !name.contains(&filter) {
            continue;
        }
        let source = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let raise_type = annotation(&source, "# Raise=").map(str::to_string);
        cases.push(Case {
            must_raise: name.starts_with("raise__") || raise_type.is_some(),
            raise_type,
            message_any: annotation(&source, "# message:").is_some_and(|m| m == "any"),
            expect_difference: annotation(&source, "# expect-difference:").map(str::to_string),
            lackpy_repr: annotation(&source, "# lackpy-repr:").map(str::to_string),
            xfail: annotation(&source, "# xfail:").map(str::to_string),
            uses_tools: TOOLS.iter().any(|t| source.contains(&format!("{t}("))),
            name,
            source,
        });
    }
    cases
}

// --- scratch workspaces -------------------------------------------------------

static SCRATCH_SEQ: AtomicUsize = AtomicUsize::new(0);

/// A throwaway copy of the fixture workspace, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        let n = SCRATCH_SEQ.fetch_add(1, Ordering::SeqCst);
        let dir =
            std::env::temp_dir().join(format!("lackpy-conformance-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        copy_dir(&corpus_dir().join("fixture_ws"), &dir)
            .unwrap_or_else(|e| panic!("cannot copy the fixture to {}: {e}", dir.display()));
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

// --- the CPython side ----------------------------------------------------------

/// What CPython did with one program.
#[derive(Debug, Clone, Default)]
struct PyResult {
    ok: bool,
    repr: Option<String>,
    /// The value in `wire::Data`'s serde shape (floats as repr strings), when plain data.
    data: Option<Value>,
    stdout: String,
    exc_type: Option<String>,
    exc_msg: Option<String>,
    /// Line of the innermost program frame of the traceback.
    exc_line: Option<u32>,
    lint: Vec<String>,
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// The reference interpreter: CPython 3.11 (`python3.11`, else `python3`),
/// or whatever `CONFORMANCE_PYTHON` names. Another minor version would
/// produce spurious mismatches (3.12 changed float `sum`, several messages),
/// so any other version is refused with a clear message.
fn python() -> &'static str {
    static PYTHON: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PYTHON.get_or_init(|| {
        let candidates: Vec<String> = match std::env::var("CONFORMANCE_PYTHON") {
            Ok(p) if !p.is_empty() => vec![p],
            _ => vec!["python3.11".to_string(), "python3".to_string()],
        };
        let mut seen = Vec::new();
        for exe in &candidates {
            let version = Command::new(exe)
                .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
                .output();
            match version {
                Ok(out) if out.status.success() => {
                    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
                    if v == "3.11" {
                        return exe.clone();
                    }
                    seen.push(format!("{exe} is {v}"));
                }
                _ => seen.push(format!("{exe} not found")),
            }
        }
        panic!(
            "the conformance reference is CPython 3.11, but {}; set CONFORMANCE_PYTHON",
            seen.join(", ")
        )
    })
}

/// Run `programs` (name, source, workspace) through `run_cpython.py` in one
/// python3 process.
fn run_python(programs: &[(String, String, Option<PathBuf>)]) -> Vec<PyResult> {
    let input: Vec<Value> = programs
        .iter()
        .map(|(name, source, ws)| {
            serde_json::json!({
                "name": name,
                "source": source,
                "workspace": ws.as_ref().map(|p| p.to_string_lossy().into_owned()),
            })
        })
        .collect();
    let input = serde_json::to_vec(&input).expect("corpus serializes to JSON");
    let mut child = Command::new(python())
        .arg(corpus_dir().join("run_cpython.py"))
        .env("PYTHONHASHSEED", "0")
        .env("PYTHONIOENCODING", "utf-8")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 is required for the conformance tests (scripts/test checks for it)");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("python3 runs");
    writer
        .join()
        .expect("stdin writer thread")
        .expect("write the corpus to python3");
    assert!(
        out.status.success(),
        "run_cpython.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<Value> =
        serde_json::from_slice(&out.stdout).expect("run_cpython.py prints a JSON list");
    assert_eq!(results.len(), programs.len(), "one result per program");
    results
        .iter()
        .map(|r| PyResult {
            ok: r.get("ok").and_then(Value::as_bool).unwrap_or(false),
            repr: str_field(r, "repr"),
            data: r.get("data").filter(|d| !d.is_null()).cloned(),
            stdout: str_field(r, "stdout").unwrap_or_default(),
            exc_type: str_field(r, "exc_type"),
            exc_msg: str_field(r, "exc_msg"),
            exc_line: r
                .get("exc_line")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok()),
            lint: r
                .get("lint")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect()
}

/// Run every case under CPython, each tool-using one in its own scratch copy.
fn python_results(cases: &[Case]) -> Vec<PyResult> {
    let scratches: Vec<Option<Scratch>> = cases
        .iter()
        .map(|c| c.uses_tools.then(Scratch::new))
        .collect();
    let programs: Vec<(String, String, Option<PathBuf>)> = cases
        .iter()
        .zip(&scratches)
        .map(|(c, s)| {
            (
                c.name.clone(),
                c.source.clone(),
                s.as_ref().map(|s| s.0.clone()),
            )
        })
        .collect();
    run_python(&programs)
}

// --- the fake tool host -----------------------------------------------------------

/// The four file tools over a scratch workspace, with the real tools' semantics
/// (the same as the Python shims in `run_cpython.py`).
struct FsHost {
    root: PathBuf,
}

fn fail(type_name: &str, message: impl Into<String>) -> ToolFailure {
    ToolFailure {
        type_name: type_name.to_string(),
        message: message.into(),
    }
}

impl FsHost {
    /// Resolve `path` beneath the root, lexically (the fixture has no symlinks).
    fn resolve(&self, path: &str) -> Result<PathBuf, ToolFailure> {
        let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
        for comp in Path::new(path).components() {
            match comp {
                Component::Normal(p) => parts.push(p),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(fail(
                            "PathOutsideWorkspace",
                            format!("path {path:?} is outside the workspace"),
                        ));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(fail(
                        "PathOutsideWorkspace",
                        format!("path {path:?} is outside the workspace"),
                    ))
                }
            }
        }
        Ok(parts.iter().fold(self.root.clone(), |acc, p| acc.join(p)))
    }

    fn read(&self, path: &str) -> Result<String, ToolFailure> {
        let full = self.resolve(path)?;
        if full.is_dir() {
            return Err(fail("IsADirectory", format!("{path} is a directory")));
        }
        let bytes =
            std::fs::read(&full).map_err(|_| fail("FileNotFound", format!("{path} not found")))?;
        String::from_utf8(bytes).map_err(|_| fail("NotUtf8", format!("{path} is not UTF-8")))
    }

    fn write(&self, path: &str, content: &str) -> Result<(), ToolFailure> {
        let full = self.resolve(path)?;
        if full.is_dir() {
            return Err(fail("IsADirectory", format!("{path} is a directory")));
        }
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).map_err(|e| fail("ToolFailed", e.to_string()))?;
        }
        std::fs::write(&full, content).map_err(|e| fail("ToolFailed", e.to_string()))
    }

    /// `pathlib.Path('.').glob(pattern)` of Python 3.11, sorted.
    fn find(&self, pattern: &str) -> Vec<String> {
        let parts: Vec<&str> = pattern
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        // Current matches, as relative component lists ([] is the root itself).
        let mut current: Vec<Vec<String>> = vec![Vec::new()];
        for (i, part) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            let mut next = Vec::new();
            for base in &current {
                let dir = base.iter().fold(self.root.clone(), |acc, p| acc.join(p));
                if *part == "**" {
                    let mut stack = vec![base.clone()];
                    while let Some(d) = stack.pop() {
                        let full = d.iter().fold(self.root.clone(), |acc, p| acc.join(p));
                        for (name, is_dir) in list_dir(&full) {
                            if is_dir {
                                let mut child = d.clone();
                                child.push(name);
                                stack.push(child);
                            }
                        }
                        next.push(d);
                    }
                } else {
                    for (name, is_dir) in list_dir(&dir) {
                        if (last || is_dir) && fnmatch(part, &name) {
                            let mut child = base.clone();
                            child.push(name);
                            next.push(child);
                        }
                    }
                }
            }
            current = next;
        }
        let found: BTreeSet<String> = current
            .into_iter()
            .map(|p| {
                if p.is_empty() {
                    ".".to_string()
                } else {
                    p.join("/")
                }
            })
            .collect();
        found.into_iter().collect()
    }
}

/// Entries of a directory as (name, is_dir); empty when it is not a directory.
fn list_dir(dir: &Path) -> Vec<(String, bool)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(Result::ok)
        .map(|e| {
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            (e.file_name().to_string_lossy().into_owned(), is_dir)
        })
        .collect()
}

/// `fnmatch.fnmatchcase`: `*`, `?`, `[seq]`, `[!seq]`; an unclosed `[` is literal.
fn fnmatch(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    fn class_end(p: &[char], start: usize) -> Option<usize> {
        let mut j = start + 1;
        if p.get(j) == Some(&'!') {
            j += 1;
        }
        if p.get(j) == Some(&']') {
            j += 1;
        }
        while j < p.len() && p[j] != ']' {
            j += 1;
        }
        (j < p.len()).then_some(j)
    }
    fn class_matches(class: &[char], c: char) -> bool {
        let (negate, body) = match class.first() {
            Some('!') => (true, &class[1..]),
            _ => (false, class),
        };
        let mut hit = false;
        let mut k = 0;
        while k < body.len() {
            if k + 2 < body.len() && body[k + 1] == '-' {
                hit |= body[k] <= c && c <= body[k + 2];
                k += 3;
            } else {
                hit |= body[k] == c;
                k += 1;
            }
        }
        hit != negate
    }
    fn go(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).any(|k| go(&p[1..], &n[k..])),
            Some('?') => !n.is_empty() && go(&p[1..], &n[1..]),
            Some('[') => match class_end(p, 0) {
                Some(end) => {
                    !n.is_empty() && class_matches(&p[1..end], n[0]) && go(&p[end + 1..], &n[1..])
                }
                None => n.first() == Some(&'[') && go(&p[1..], &n[1..]),
            },
            Some(c) => n.first() == Some(c) && go(&p[1..], &n[1..]),
        }
    }
    go(&p, &n)
}

/// Bind positional and keyword arguments to the tool's parameter names.
fn bind(
    name: &str,
    params: &[&str],
    args: Vec<Data>,
    kwargs: Vec<(String, Data)>,
) -> Result<Vec<String>, ToolFailure> {
    if args.len() > params.len() {
        return Err(fail(
            "BadArgument",
            format!("{name}() takes {} arguments", params.len()),
        ));
    }
    let mut slots: Vec<Option<Data>> = args.into_iter().map(Some).collect();
    slots.resize(params.len(), None);
    for (k, v) in kwargs {
        let Some(i) = params.iter().position(|p| *p == k) else {
            return Err(fail(
                "BadArgument",
                format!("{name}() got an unexpected keyword argument {k:?}"),
            ));
        };
        if slots[i].is_some() {
            return Err(fail(
                "BadArgument",
                format!("{name}() got multiple values for {k:?}"),
            ));
        }
        slots[i] = Some(v);
    }
    slots
        .into_iter()
        .zip(params)
        .map(|(v, p)| match v {
            Some(Data::Str(s)) => Ok(s),
            Some(_) => Err(fail("BadArgument", format!("{name}(): {p} must be a str"))),
            None => Err(fail(
                "BadArgument",
                format!("{name}() missing argument {p}"),
            )),
        })
        .collect()
}

impl ToolHost for FsHost {
    fn call(&mut self, name: &str, args: Vec<Data>, kwargs: Kwargs) -> Result<Data, ToolFailure> {
        match name {
            "read_file" => {
                let a = bind(name, &["path"], args, kwargs)?;
                self.read(&a[0]).map(Data::Str)
            }
            "find_files" => {
                let a = bind(name, &["pattern"], args, kwargs)?;
                Ok(Data::List(
                    self.find(&a[0]).into_iter().map(Data::Str).collect(),
                ))
            }
            "write_file" => {
                let a = bind(name, &["path", "content"], args, kwargs)?;
                self.write(&a[0], &a[1]).map(|()| Data::Bool(true))
            }
            "edit_file" => {
                let a = bind(name, &["path", "old_str", "new_str"], args, kwargs)?;
                let text = self.read(&a[0])?;
                if !text.contains(a[1].as_str()) {
                    return Ok(Data::Bool(false));
                }
                self.write(&a[0], &text.replacen(a[1].as_str(), &a[2], 1))?;
                Ok(Data::Bool(true))
            }
            _ => Err(fail("ToolFailed", format!("unknown tool {name}"))),
        }
    }
}

/// A tool host for programs that use no tools.
struct NoTools;

impl ToolHost for NoTools {
    fn call(&mut self, name: &str, _args: Vec<Data>, _kwargs: Kwargs) -> Result<Data, ToolFailure> {
        Err(fail("ToolFailed", format!("no workspace for {name}")))
    }
}

// --- the lackpy side ----------------------------------------------------------------

fn namespace() -> Namespace {
    let tool = |name: &str, args: &[&str], w, d| ToolEntry::new(name, args, Grade { w, d });
    Namespace {
        tools: vec![
            tool("read_file", &["path"], 1, 0),
            tool("find_files", &["pattern"], 1, 0),
            tool("write_file", &["path", "content"], 3, 3),
            tool("edit_file", &["path", "old_str", "new_str"], 3, 3),
        ],
    }
}

/// What lackpy did with one program.
#[derive(Debug, Clone)]
enum LackpyOutcome {
    /// The validator rejected it.
    Rejected(String),
    /// It ran: repr (None when it ended in a statement), stdout, error (kind, type, message).
    Ran {
        value: Option<Data>,
        repr: Option<String>,
        stdout: String,
        error: Option<(ErrorKind, String, String, Option<u32>)>,
    },
    /// The interpreter panicked.
    Panicked(String),
    /// The interpreter did not return in time.
    Hung,
}

fn run_lackpy(case: &Case) -> LackpyOutcome {
    let source = case.source.clone();
    let uses_tools = case.uses_tools;
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name(case.name.clone())
        .stack_size(64 * 1024 * 1024)
        .spawn(move || {
            let outcome = std::panic::catch_unwind(move || {
                // The worker's stack budget (role.rs), so nesting bounds
                // (repr of lists ~997 deep) are the real worker's.
                set_stack_budget(WORKER_STACK_BUDGET);
                let limits = Limits::default();
                let scratch = uses_tools.then(Scratch::new);
                let mut fs_host;
                let mut no_tools = NoTools;
                let host: &mut dyn ToolHost = match &scratch {
                    Some(s) => {
                        fs_host = FsHost { root: s.0.clone() };
                        &mut fs_host
                    }
                    None => &mut no_tools,
                };
                let mut stdout = String::new();
                let result = run_source(
                    &source,
                    &TOOLS,
                    host,
                    &mut stdout as &mut dyn Output,
                    &limits,
                );
                if let Some(e) = result
                    .error
                    .as_ref()
                    .filter(|e| e.kind == ErrorKind::Validation)
                {
                    return LackpyOutcome::Rejected(format!(
                        "{} at {:?}:{:?}: {}",
                        e.type_name, e.line, e.col, e.message
                    ));
                }
                LackpyOutcome::Ran {
                    value: result.value,
                    repr: result.repr,
                    stdout,
                    error: result
                        .error
                        .map(|e| (e.kind, e.type_name, e.message, e.line)),
                }
            });
            let outcome = outcome.unwrap_or_else(|p| {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "non-string panic".to_string());
                LackpyOutcome::Panicked(msg)
            });
            let _ = tx.send(outcome);
        });
    if spawned.is_err() {
        return LackpyOutcome::Panicked("could not spawn the runner thread".to_string());
    }
    rx.recv_timeout(PER_PROGRAM_TIMEOUT)
        .unwrap_or(LackpyOutcome::Hung)
}

fn shorten(s: &str) -> String {
    const MAX: usize = 300;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(MAX).collect::<String>())
    }
}

/// "expected X, got Y"; for long texts, only the region around the first
/// difference, so the report stays readable.
fn describe_difference(expected: &str, got: &str) -> String {
    const CONTEXT: usize = 60;
    let e: Vec<char> = expected.chars().collect();
    let g: Vec<char> = got.chars().collect();
    if e.len() <= 2 * CONTEXT && g.len() <= 2 * CONTEXT {
        return format!("expected {expected}, got {got}");
    }
    let at = e.iter().zip(&g).take_while(|(a, b)| a == b).count();
    let from = at.saturating_sub(CONTEXT);
    let window = |v: &[char]| -> String {
        let end = (at + CONTEXT).min(v.len());
        let text: String = v.get(from..end).unwrap_or_default().iter().collect();
        let pre = if from > 0 { "…" } else { "" };
        let post = if end < v.len() { "…" } else { "" };
        format!("{pre}{text}{post}")
    };
    format!(
        "first difference at char {at} of {}: expected {}, got {}",
        e.len(),
        window(&e),
        window(&g)
    )
}

/// Does lackpy's `Data` have the shape CPython's value has (`want` is
/// `run_cpython.py`'s `to_data`)? Sets compare without order (their order is
/// a documented difference); floats compare by value, NaN equal to NaN.
fn data_matches(want: &Value, got: &Data) -> bool {
    let items = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let seq = |w: &Value, g: &[Data]| {
        let w = items(w);
        w.len() == g.len() && w.iter().zip(g).all(|(a, b)| data_matches(a, b))
    };
    match (want, got) {
        (Value::String(s), Data::None) => s == "None",
        (Value::Object(m), got) => {
            let Some((tag, inner)) = m.iter().next() else {
                return false;
            };
            match (tag.as_str(), got) {
                ("Bool", Data::Bool(b)) => inner.as_bool() == Some(*b),
                ("Int", Data::Int(i)) => inner.as_i64() == Some(*i),
                ("BigInt", Data::BigInt(t)) => inner.as_str() == Some(t.as_str()),
                ("Float", Data::Float(f)) => {
                    let want: Option<f64> = inner.as_str().and_then(|t| t.parse().ok());
                    want.is_some_and(|w| (w.is_nan() && f.is_nan()) || w.to_bits() == f.to_bits())
                }
                ("Str", Data::Str(t)) => inner.as_str() == Some(t.as_str()),
                ("List", Data::List(g)) | ("Tuple", Data::Tuple(g)) => seq(inner, g),
                ("Set", Data::Set(g)) => {
                    let w = items(inner);
                    let mut used = vec![false; g.len()];
                    w.len() == g.len()
                        && w.iter().all(|a| {
                            let hit = g
                                .iter()
                                .enumerate()
                                .find(|(i, b)| !used[*i] && data_matches(a, b));
                            hit.map(|(i, _)| used[i] = true).is_some()
                        })
                }
                ("Dict", Data::Dict(g)) => {
                    let w = items(inner);
                    w.len() == g.len()
                        && w.iter().zip(g).all(|(pair, (k, v))| {
                            let pair = items(pair);
                            pair.len() == 2
                                && data_matches(&pair[0], k)
                                && data_matches(&pair[1], v)
                        })
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// A repr for the report; `None` is a program that ended in a statement.
fn show(repr: &Option<String>) -> String {
    repr.as_deref()
        .map_or_else(|| "<no value>".to_string(), shorten)
}

/// Compare lackpy's outcome with CPython's; `Err` describes the mismatch.
fn compare(case: &Case, py: &PyResult, lp: &LackpyOutcome) -> Result<(), String> {
    let (value, repr, stdout, error) = match lp {
        LackpyOutcome::Rejected(e) => return Err(format!("rejected by the validator: {e}")),
        LackpyOutcome::Panicked(m) => return Err(format!("interpreter panicked: {m}")),
        LackpyOutcome::Hung => return Err(format!("no result within {PER_PROGRAM_TIMEOUT:?}")),
        LackpyOutcome::Ran {
            value,
            repr,
            stdout,
            error,
        } => (value, repr, stdout, error),
    };
    let mut problems = Vec::new();
    if stdout != &py.stdout {
        problems.push(format!(
            "stdout: expected {:?}, got {:?}",
            shorten(&py.stdout),
            shorten(stdout)
        ));
    }
    if py.ok {
        let expected_repr = case.lackpy_repr.clone().or_else(|| py.repr.clone());
        match error {
            Some((kind, ty, msg, _)) => problems.push(format!(
                "expected value {}, got {kind:?} error {ty}: {}",
                show(&expected_repr),
                shorten(msg)
            )),
            None if repr != &expected_repr => problems.push(format!(
                "repr: {}",
                describe_difference(
                    expected_repr.as_deref().unwrap_or("<no value>"),
                    repr.as_deref().unwrap_or("<no value>")
                )
            )),
            None => {
                if let (Some(want), None) = (&py.data, &case.lackpy_repr) {
                    match value {
                        Some(got) if data_matches(want, got) => {}
                        got => problems.push(format!(
                            "value (wire::Data): expected {}, got {}",
                            shorten(&want.to_string()),
                            shorten(&format!("{got:?}"))
                        )),
                    }
                }
            }
        }
    } else {
        let want_ty = py.exc_type.clone().unwrap_or_default();
        let want_msg = py.exc_msg.clone().unwrap_or_default();
        match error {
            None => problems.push(format!(
                "expected {want_ty}: {}, got value {}",
                shorten(&want_msg),
                show(repr)
            )),
            Some((kind, ty, msg, line)) => {
                if py.exc_line.is_some() && *line != py.exc_line {
                    problems.push(format!(
                        "error line: expected {:?}, got {line:?}",
                        py.exc_line
                    ));
                }
                let want_kind = if TOOL_ERROR_TYPES.contains(&want_ty.as_str()) {
                    ErrorKind::Tool
                } else {
                    ErrorKind::Runtime
                };
                if *kind != want_kind {
                    problems.push(format!("error kind: expected {want_kind:?}, got {kind:?}"));
                }
                if ty != &want_ty {
                    problems.push(format!(
                        "exception type: expected {want_ty}, got {ty} ({})",
                        shorten(msg)
                    ));
                } else if !case.message_any && msg != &want_msg {
                    problems.push(format!(
                        "message: expected {:?}, got {:?}",
                        shorten(&want_msg),
                        shorten(msg)
                    ));
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n    "))
    }
}

// --- tests ------------------------------------------------------------------------------

/// The corpus is honest: under CPython every program behaves as labelled
/// (success programs succeed, raise programs raise the labelled type), uses
/// only the lackpy subset (a conservative AST lint in `run_cpython.py`), and
/// the corpus is as large as the issue asks. Needs only python3.
#[test]
fn corpus_behaves_as_labelled_under_cpython() {
    let cases = load_corpus();
    assert!(!cases.is_empty(), "no programs matched");
    let results = python_results(&cases);
    let mut bad = Vec::new();
    for (case, py) in cases.iter().zip(&results) {
        if case.must_raise && py.ok {
            bad.push(format!(
                "{}: labelled as raising, but CPython returned {:?}",
                case.name, py.repr
            ));
        }
        if !case.must_raise && !py.ok {
            bad.push(format!(
                "{}: labelled as succeeding, but CPython raised {}: {}",
                case.name,
                py.exc_type.as_deref().unwrap_or("?"),
                py.exc_msg.as_deref().unwrap_or("")
            ));
        }
        if let (Some(want), Some(got)) = (&case.raise_type, &py.exc_type) {
            if want != got {
                bad.push(format!(
                    "{}: # Raise={want}, but CPython raised {got}",
                    case.name
                ));
            }
        }
        if !py.lint.is_empty() {
            bad.push(format!(
                "{}: outside the lackpy subset: {}",
                case.name,
                py.lint.join("; ")
            ));
        }
        if case.xfail.is_some() && case.expect_difference.is_some() {
            bad.push(format!(
                "{}: both # xfail and # expect-difference",
                case.name
            ));
        }
        if case.lackpy_repr.is_some() && case.expect_difference.is_none() {
            bad.push(format!(
                "{}: # lackpy-repr without # expect-difference",
                case.name
            ));
        }
    }
    if std::env::var("CONFORMANCE_FILTER")
        .unwrap_or_default()
        .is_empty()
    {
        let raising = cases.iter().filter(|c| c.must_raise).count();
        let succeeding = cases.len() - raising;
        if succeeding < MIN_SUCCESS {
            bad.push(format!(
                "only {succeeding} success programs (want >= {MIN_SUCCESS})"
            ));
        }
        if raising < MIN_RAISE {
            bad.push(format!(
                "only {raising} raising programs (want >= {MIN_RAISE})"
            ));
        }
        let differences =
            std::fs::read_to_string(corpus_dir().join("DIFFERENCES.md")).unwrap_or_default();
        for case in cases.iter().filter(|c| c.expect_difference.is_some()) {
            if !differences.contains(&case.name) {
                bad.push(format!(
                    "{}: # expect-difference but not listed in DIFFERENCES.md",
                    case.name
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} corpus problem(s):\n{}",
        bad.len(),
        bad.join("\n")
    );
    eprintln!("{} programs behave as labelled under CPython", cases.len());
}

/// Every corpus program passes lackpy's validator with the four file tools.
#[test]
fn corpus_passes_the_validator() {
    let cases = load_corpus();
    let ns = namespace();
    let limits = Limits::default();
    let rejected: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            validate(&c.source, &ns, &limits).err().map(|errs| {
                let why: Vec<String> = errs
                    .iter()
                    .map(|e| format!("{} at {:?}:{:?}: {}", e.type_name, e.line, e.col, e.message))
                    .collect();
                format!("{}: {}", c.name, why.join("; "))
            })
        })
        .collect();
    assert!(
        rejected.is_empty(),
        "{} program(s) rejected by the validator:\n{}",
        rejected.len(),
        rejected.join("\n")
    );
}

/// The Rust fake tools used by the differential test agree with the Python
/// shims on `find_files` patterns and on path handling.
#[test]
fn fake_tools_match_the_python_shims() {
    let patterns = [
        "*",
        "*.txt",
        "**",
        "**/*",
        "**/*.txt",
        "sub/*",
        "sub/**",
        "sub/**/*.txt",
        "*/*",
        ".*",
        "?.md",
        "[ab].*",
        "[!a]*",
        "missing/*",
        "sub/deep",
        "a.txt",
        "nothing",
        "**/deep/*",
        "*.[ct]*",
    ];
    let scratch = Scratch::new();
    let programs: Vec<(String, String, Option<PathBuf>)> = patterns
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (
                format!("glob{i}"),
                format!("find_files({p:?})\n"),
                Some(scratch.0.clone()),
            )
        })
        .collect();
    let py = run_python(&programs);
    let mut host = FsHost {
        root: scratch.0.clone(),
    };
    let mut bad = Vec::new();
    for (pattern, py) in patterns.iter().zip(&py) {
        let got = match host.call(
            "find_files",
            vec![Data::Str(pattern.to_string())],
            Vec::new(),
        ) {
            Ok(Data::List(items)) => items
                .iter()
                .map(|d| match d {
                    Data::Str(s) => format!("'{s}'"),
                    other => format!("{other:?}"),
                })
                .collect::<Vec<_>>(),
            other => vec![format!("{other:?}")],
        };
        let got = format!("[{}]", got.join(", "));
        if py.repr.as_deref() != Some(got.as_str()) {
            bad.push(format!(
                "find_files({pattern:?}): python {:?}, fake {got:?}",
                py.repr
            ));
        }
    }
    let read = |p: &str| host.read(p).map_err(|e| e.type_name);
    let expectations: [(&str, Result<&str, &str>); 6] = [
        ("a.txt", Ok("alpha\nbeta\ngamma\n")),
        ("sub/../a.txt", Ok("alpha\nbeta\ngamma\n")),
        ("../a.txt", Err("PathOutsideWorkspace")),
        ("/etc/hostname", Err("PathOutsideWorkspace")),
        ("sub", Err("IsADirectory")),
        ("nope", Err("FileNotFound")),
    ];
    for (path, want) in expectations {
        let got = read(path);
        if got.as_deref().map_err(String::as_str) != want {
            bad.push(format!("read_file({path:?}): want {want:?}, got {got:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The differential comparison itself: CPython vs lackpy's interpreter.
#[test]
fn corpus_matches_cpython() {
    let cases = load_corpus();
    let py_results = python_results(&cases);
    let (mut passed, mut skipped, mut xfailed) = (0usize, 0usize, 0usize);
    let mut failures = Vec::new();
    for (case, py) in cases.iter().zip(&py_results) {
        if case.expect_difference.is_some() && case.lackpy_repr.is_none() {
            skipped += 1;
            continue;
        }
        let lp = run_lackpy(case);
        match (compare(case, py, &lp), &case.xfail) {
            (Ok(()), None) => passed += 1,
            (Err(_), Some(_)) => xfailed += 1,
            (Err(why), None) => failures.push(format!("{}:\n    {why}", case.name)),
            (Ok(()), Some(reason)) => failures.push(format!(
                "{}:\n    XPASS: now matches CPython; remove its `# xfail: {reason}` line",
                case.name
            )),
        }
    }
    let summary = format!(
        "{passed} passed, {} failed, {xfailed} known failures (# xfail), {skipped} skipped (deliberate differences)",
        failures.len()
    );
    if !failures.is_empty() {
        panic!(
            "{} mismatch(es) against CPython:\n{}\n{summary}",
            failures.len(),
            failures.join("\n")
        );
    }
    eprintln!("{summary}");
}

/// The `wire::Data` shape comparison used by `corpus_matches_cpython`.
#[test]
fn data_shape_comparison() {
    let py = |text: &str| -> Value { serde_json::from_str(text).expect("test JSON") };
    let tuple = Data::Tuple(vec![Data::Int(1), Data::Float(f64::NAN)]);
    assert!(data_matches(
        &py(r#"{"Tuple": [{"Int": 1}, {"Float": "nan"}]}"#),
        &tuple
    ));
    assert!(!data_matches(
        &py(r#"{"List": [{"Int": 1}, {"Float": "nan"}]}"#),
        &tuple
    ));
    assert!(!data_matches(
        &py(r#"{"Tuple": [{"Bool": true}, {"Float": "nan"}]}"#),
        &tuple
    ));
    let set = Data::Set(vec![Data::Str("b".into()), Data::Str("a".into())]);
    assert!(data_matches(
        &py(r#"{"Set": [{"Str": "a"}, {"Str": "b"}]}"#),
        &set
    ));
    assert!(!data_matches(
        &py(r#"{"Set": [{"Str": "a"}, {"Str": "a"}]}"#),
        &set
    ));
    let dict = Data::Dict(vec![(
        Data::None,
        Data::BigInt("-99999999999999999999".into()),
    )]);
    assert!(data_matches(
        &py(r#"{"Dict": [["None", {"BigInt": "-99999999999999999999"}]]}"#),
        &dict
    ));
    assert!(!data_matches(
        &py(r#"{"Dict": [["None", {"Int": 5}]]}"#),
        &dict
    ));
    assert!(data_matches(
        &py(r#"{"Float": "-0.0"}"#),
        &Data::Float(-0.0)
    ));
    assert!(!data_matches(
        &py(r#"{"Float": "0.0"}"#),
        &Data::Float(-0.0)
    ));
    assert!(data_matches(
        &py(r#"{"Float": "inf"}"#),
        &Data::Float(f64::INFINITY)
    ));
}

// --- randomized differential programs ----------------------------------------------

/// A small deterministic PRNG (xorshift64*), so failures are reproducible from the seed.
/// The allowed `str.is*()` methods, from the policy's method table.
fn str_predicates() -> Vec<&'static str> {
    let methods = lackpy_policy::lang::tables::METHODS.iter();
    let str_methods = methods
        .filter(|(t, _)| *t == "str")
        .flat_map(|(_, ms)| ms.iter());
    str_methods
        .copied()
        .filter(|m| m.starts_with("is"))
        .collect()
}

use crate::rng::Rng;

const INT_ATOMS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "7",
    "-7",
    "10",
    "255",
    "-256",
    "2147483648",
    "9007199254740993",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "100000000000000000000",
    "-999999999999999999999999999993",
    "True",
    "False",
];
const FLOAT_ATOMS: &[&str] = &[
    "0.0",
    "-0.0",
    "0.1",
    "0.5",
    "1.5",
    "2.5",
    "-2.5",
    "1e16",
    "1e-07",
    "3.14159",
    "1e300",
    "-1e300",
    "123.456",
    "2.675",
    "float('inf')",
    "float('-inf')",
    "float('nan')",
    "5e-324",
];
const STR_ATOMS: &[&str] = &[
    "''",
    "'a'",
    "'abc'",
    "'Hello World'",
    "'  pad  '",
    "'a,b,,c'",
    "'ß'",
    "'é😀x'",
    "'123'",
    "'\\t\\n x'",
    "'ǅa ΣΣ'",
    "'İstanbul ﬁx'",
    "'ΌΣΟΣ. ΣΑΣ'",
    "'١٢٣'",
    "' 1_000 '",
    "'Ǆemal'",
    "'aaaa'",
    "'-42'",
];
const NUM_OPS: &[&str] = &["+", "-", "*", "/", "//", "%"];
const CMP_OPS: &[&str] = &["<", "<=", ">", ">=", "==", "!="];

fn gen_num(rng: &mut Rng, depth: u32) -> String {
    if depth == 0 || rng.below(3) == 0 {
        return if rng.below(2) == 0 {
            rng.pick(INT_ATOMS).to_string()
        } else {
            rng.pick(FLOAT_ATOMS).to_string()
        };
    }
    let a = gen_num(rng, depth - 1);
    let b = gen_num(rng, depth - 1);
    match rng.below(9) {
        0..=3 => format!("({a} {} {b})", rng.pick(NUM_OPS)),
        4 => format!("(-{a})"),
        5 => format!("abs({a})"),
        6 => format!(
            "round({a}, {})",
            rng.pick(&["-2", "-1", "0", "1", "2", "5"])
        ),
        7 => format!("{}({a})", rng.pick(&["int", "float", "round", "bool"])),
        _ => format!("{}({a}, {b})", rng.pick(&["min", "max"])),
    }
}

fn gen_str(rng: &mut Rng, depth: u32) -> String {
    let s = if depth == 0 || rng.below(2) == 0 {
        rng.pick(STR_ATOMS).to_string()
    } else {
        gen_str(rng, depth - 1)
    };
    let sub = rng.pick(&["''", "'a'", "','", "' '", "'ab'", "'x'", "'Σ'"]);
    let int = rng.pick(&["-3", "-1", "0", "1", "2", "5", "9"]);
    let int2 = rng.pick(&["-2", "0", "3", "100"]);
    let m = rng.below(24);
    match m {
        0 => format!(
            "{s}.{}()",
            rng.pick(&[
                "upper",
                "lower",
                "title",
                "capitalize",
                "swapcase",
                "casefold"
            ])
        ),
        1 => format!(
            "{s}.{}({})",
            rng.pick(&["strip", "lstrip", "rstrip"]),
            rng.pick(&["", "'a'", "' ,'", "None"])
        ),
        2 => format!("{s}.split({sub}, {int})"),
        3 => format!("{s}.rsplit({sub}, {int})"),
        4 => format!("{s}.split()"),
        5 => format!("{s}.replace({sub}, '-', {int})"),
        6 => format!(
            "{s}.{}({sub}, {int}, {int2})",
            rng.pick(&["find", "rfind", "count"])
        ),
        7 => format!(
            "{s}.{}({int2}, {})",
            rng.pick(&["center", "ljust", "rjust"]),
            rng.pick(&["'*'", "' '", "'é'"])
        ),
        8 => format!("{s}.zfill({int2})"),
        9 => format!(
            "{s}.{}({sub}, {int}, {int2})",
            rng.pick(&["startswith", "endswith"])
        ),
        10 => format!(
            "{s}.{}({sub})",
            rng.pick(&[
                "partition",
                "rpartition",
                "removeprefix",
                "removesuffix",
                "index",
                "rindex"
            ])
        ),
        11 => format!("{s}.splitlines({})", rng.pick(&["", "True", "False"])),
        12 => format!("{s}.expandtabs({int})"),
        13 => format!("{s}.{}()", rng.pick(&str_predicates())),
        14 => format!("{sub}.join({s})"),
        15 => format!("({s} + {})", gen_str(rng, depth.saturating_sub(1))),
        16 => format!("({s} * {int})"),
        17 => format!(
            "{s}[{int}:{int2}:{}]",
            rng.pick(&["", "1", "-1", "2", "-2"])
        ),
        18 => format!("{s}[{int}]"),
        19 => format!("repr({s})"),
        20 => format!("str({})", gen_num(rng, 1)),
        21 => format!("int({s})"),
        22 => format!("float({s})"),
        _ => format!("sorted({s})"),
    }
}

fn gen_spec(rng: &mut Rng, numeric: bool) -> String {
    let mut spec = String::new();
    if rng.below(3) == 0 {
        spec.push_str(rng.pick(&["*", "0", "é", " "]));
        spec.push_str(rng.pick(&["<", ">", "^", "="]));
    } else if rng.below(3) == 0 {
        spec.push_str(rng.pick(&["<", ">", "^", "="]));
    }
    if numeric && rng.below(3) == 0 {
        spec.push_str(rng.pick(&["+", "-", " "]));
    }
    if numeric && rng.below(4) == 0 {
        spec.push('#');
    }
    if rng.below(4) == 0 {
        spec.push('0');
    }
    if rng.below(2) == 0 {
        spec.push_str(rng.pick(&["1", "5", "12"]));
    }
    if numeric && rng.below(4) == 0 {
        spec.push_str(rng.pick(&[",", "_"]));
    }
    if rng.below(2) == 0 {
        spec.push_str(rng.pick(&[".0", ".1", ".3", ".10"]));
    }
    let types: &[&str] = if numeric {
        &[
            "", "d", "b", "o", "x", "X", "e", "E", "f", "F", "g", "G", "n", "%", "c", "s",
        ]
    } else {
        &["", "s", "d"]
    };
    spec.push_str(rng.pick(types));
    spec
}

const LIST_ATOMS: &[&str] = &[
    "[]",
    "[1, 2, 3]",
    "[3, 1, 2, 1]",
    "['b', 'a', 'c']",
    "[1, 'a']",
    "[[1], [0], []]",
    "[0.5, -1, True]",
    "[(2, 'b'), (1, 'z'), (2, 'a')]",
    "(4, 5, 6)",
    "'hello'",
    "range(5)",
    "range(10, 0, -3)",
    "[None, 0, '']",
    "[float('nan'), 1]",
];
const DICT_ATOMS: &[&str] = &[
    "{}",
    "{'a': 1, 'b': 2}",
    "{1: 'x', 2: 'y', 3: 'x'}",
    "{'k': [1, 2]}",
];
const KEYS: &[&str] = &[
    "'a'", "'b'", "1", "2", "'k'", "0", "True", "1.0", "(1,)", "None",
];
const SMALL: &[&str] = &["-4", "-1", "0", "1", "2", "3", "10", "None"];

fn gen_container(rng: &mut Rng) -> String {
    let l = rng.pick(LIST_ATOMS);
    let l2 = rng.pick(LIST_ATOMS);
    let d = rng.pick(DICT_ATOMS);
    let d2 = rng.pick(DICT_ATOMS);
    let k = rng.pick(KEYS);
    let (i, j, st) = (rng.pick(SMALL), rng.pick(SMALL), rng.pick(SMALL));
    match rng.below(30) {
        0 => format!("sorted({l})"),
        1 => format!("sorted({l}, reverse=True)"),
        2 => format!("sorted({l}, key=lambda v: str(v))"),
        3 => format!(
            "{}({l})",
            rng.pick(&["min", "max", "sum", "len", "any", "all"])
        ),
        4 => format!("{}({l}, default={k})", rng.pick(&["min", "max"])),
        5 => format!("{l}[{i}:{j}:{st}]"),
        6 => format!("{l}[{i}]"),
        7 => format!("{l} + {l2}"),
        8 => format!("{l} * {i}"),
        9 => format!(
            "{}({l}).{}({k})",
            rng.pick(&["list", "tuple"]),
            rng.pick(&["index", "count"])
        ),
        10 => format!("{k} in {l}"),
        11 => format!("list(reversed({l}))"),
        12 => format!("list(enumerate({l}, {i}))"),
        13 => format!("list(zip({l}, {l2}))"),
        14 => format!("len(set({l}))"),
        15 => format!("dict(zip({l}, {l2}))"),
        16 => format!("[v for v in {l} if v]"),
        17 => format!("{l} {} {l2}", rng.pick(CMP_OPS)),
        18 => format!("{d}.get({k}, {i})"),
        19 => format!("list({d}.items())"),
        20 => format!("{d}[{k}]"),
        21 => format!("{{**{d}, **{d2}}}"),
        22 => format!("{k} in {d}"),
        23 => format!("sorted({d}, key=lambda v: str(v))"),
        24 => format!("[{d}.keys(), {d}.values(), {d}.items()]"),
        25 => format!("{d} == {d2}"),
        26 => format!("{{v: i for i, v in enumerate({l})}}"),
        27 => format!("sort_by({l}, {})", rng.pick(&["0", "1", "-1", "'a'"])),
        28 => format!("list({l})[{i}:{j}] + [{k}]"),
        _ => format!("tuple({l}) {} tuple({l2})", rng.pick(CMP_OPS)),
    }
}

/// A random float literal: up to 17 significant digits, exponent -30..30,
/// sometimes an exact binary fraction (ties for rounding).
fn gen_float_literal(rng: &mut Rng) -> String {
    if rng.below(4) == 0 {
        let whole = rng.next() % 1_000_000_000_000_000;
        let frac = rng.pick(&["0.5", "0.25", "0.75", "0.125", "0.375", "0.625", "0.0625"]);
        return format!("({whole} + {frac})");
    }
    let ndigits = 1 + rng.below(17);
    let digits: String = (0..ndigits)
        .map(|_| char::from(b'0' + u8::try_from(rng.below(10)).unwrap_or(0)))
        .collect();
    let exp = i64::try_from(rng.below(61)).unwrap_or(0) - 30;
    let sign = if rng.below(3) == 0 { "-" } else { "" };
    format!("{sign}{}.{}e{exp}", &digits[..1], &digits[1..])
}

fn gen_float_format(rng: &mut Rng) -> String {
    let x = gen_float_literal(rng);
    let p = rng.below(18);
    match rng.below(8) {
        0 => format!("repr({x})"),
        1 => format!("f'{{{x}:.{p}f}}'"),
        2 => format!("f'{{{x}:.{p}e}}'"),
        3 => format!("f'{{{x}:.{p}g}}'"),
        4 => format!("f'{{{x}:.{p}%}}'"),
        5 => format!("round({x}, {})", i64::try_from(p).unwrap_or(0) - 5),
        6 => format!("[{x} / 7, {x} * 3, {x} + 0.1, {x} // 0.3, {x} % 0.7]"),
        _ => format!("f'{{{x}:,.{p}f}}'"),
    }
}

/// One random expression program.
fn gen_program(rng: &mut Rng) -> String {
    let expr = match rng.below(7) {
        6 => gen_float_format(rng),
        5 => gen_container(rng),
        0 | 1 => gen_num(rng, 3),
        2 => gen_str(rng, 2),
        3 => {
            let n = 2 + rng.below(2);
            let mut e = gen_operand(rng);
            for _ in 0..n {
                e = format!("{e} {} {}", rng.pick(CMP_OPS), gen_operand(rng));
            }
            e
        }
        _ => {
            let numeric = rng.below(4) != 0;
            let v = if numeric {
                gen_num(rng, 1)
            } else {
                // No backslashes inside an f-string expression (3.11).
                rng.pick(&["''", "'a'", "'abc'", "'ß'", "'é😀x'", "'-42'"])
                    .to_string()
            };
            let conv = rng.pick(&["", "", "", "!r", "!s", "!a"]);
            format!("f\"{{{v}{conv}:{}}}\"", gen_spec(rng, numeric))
        }
    };
    format!("{expr}\n")
}

fn gen_operand(rng: &mut Rng) -> String {
    match rng.below(5) {
        0 => rng.pick(STR_ATOMS).to_string(),
        1 => rng.pick(FLOAT_ATOMS).to_string(),
        _ => rng.pick(INT_ATOMS).to_string(),
    }
}

/// Random arithmetic, comparison, string-method, format-spec, container and
/// float-formatting expressions,
/// each its own program, compared with CPython like the corpus. The seed
/// (`CONFORMANCE_SEED`, default fixed) and count (`CONFORMANCE_RANDOM`,
/// default 1500) make any failure reproducible.
#[test]
fn random_expressions_match_cpython() {
    let seed = std::env::var("CONFORMANCE_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(0x1ac4_b7e5_eed5_0001)
        | 1;
    let count = std::env::var("CONFORMANCE_RANDOM")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(1500);
    let mut rng = Rng(seed);
    let cases: Vec<Case> = (0..count)
        .map(|i| Case {
            name: format!("random_{i}"),
            source: gen_program(&mut rng),
            must_raise: false,
            raise_type: None,
            message_any: false,
            expect_difference: None,
            lackpy_repr: None,
            xfail: None,
            uses_tools: false,
        })
        .collect();
    let programs: Vec<(String, String, Option<PathBuf>)> = cases
        .iter()
        .map(|c| (c.name.clone(), c.source.clone(), None))
        .collect();
    let py_results = run_python(&programs);
    let mut failures = Vec::new();
    let mut raised = 0;
    for (case, py) in cases.iter().zip(&py_results) {
        assert!(
            py.lint.is_empty(),
            "generator left the subset: {} {:?}",
            case.source,
            py.lint
        );
        raised += usize::from(!py.ok);
        if let Err(why) = compare(case, py, &run_lackpy(case)) {
            failures.push(format!("{}\n    {why}", case.source.trim_end()));
        }
    }
    let summary = format!(
        "{} passed, {} failed (seed {seed:#x}; {raised} raise under CPython)",
        count - failures.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}\n{summary}", failures.join("\n"));
    eprintln!("{summary}");
}
