//! Code intelligence over the workspace's Python sources, built on the
//! parser lackpy already has (rustpython-parser):
//!
//! - `find_definitions(name) -> list[dict]`: `{"file", "line", "kind"
//!   ("function" | "class" | "method"), "name" (qualified: `Class.method`,
//!   `outer.inner`), "signature"}` for every `def`/`class` whose simple or
//!   qualified name is `name` — or, when `name` is a file selector (it holds
//!   a `/` or a glob character, or ends in `.py`: `src/a.py`, `src/pkg`,
//!   `tests/*.py`, `utils.py`), for every definition in the files it selects:
//!   a `find_files` pattern matched against the indexed files' paths and
//!   the folders holding them, one without `/` matching a file name
//!   anywhere. A path without glob characters that selects no indexed file
//!   fails with `FileNotFound`;
//! - `find_callers(name) -> list[dict]`: `{"file", "line", "caller"
//!   (qualified enclosing function or class, or `"<module>"`), "text" (the
//!   call's first source line, stripped)}` for every call whose callee is
//!   `name`, `x.name`, or (for a dotted `name`) ends with it.
//!
//! Files: `**/*.py` beneath the workspace, opened beneath its descriptor
//! with `openat2(RESOLVE_BENEATH)` and `O_NOFOLLOW` (symlinks are never
//! followed, in or out); hidden directories and files, `__pycache__`,
//! `node_modules`, `site-packages` and virtual environments (a directory
//! holding `pyvenv.cfg`) are skipped, as are files over 1 MiB, files that
//! are not UTF-8, files nesting deeper than [`MAX_NESTING`] and files that
//! do not parse, and files whose index would exceed [`MAX_INDEX_BYTES`].
//! A call's `text` is cut to [`MAX_TEXT_BYTES`]. Results are sorted by
//! (file, line). Each file's index is cached in memory per content hash
//! (keyed SipHash), so a repeated query re-reads but does not re-parse;
//! a call that needs a file another call is indexing waits for it rather
//! than parsing a copy of its own. Parsing runs on a dedicated thread with
//! a large stack, at most [`MAX_INDEXERS`] calls indexing at once per
//! process (the others wait their turn).
//!
//! Every size is bounded (files, directories, bytes read per call, index
//! and result bytes, cache bytes; beyond a per-call bound the call fails
//! with `TooLarge` naming it) and the indexer polls the run's deadline and
//! cancel flag between directory entries and before each file: a call that
//! runs out of time fails with `Timeout` as soon as the deadline passes
//! (the indexing thread stops after the file it is parsing).

use super::fs::{openat2, Workspace};
use super::glob::GLOB_CHARS;
use crate::call::{Interrupt, RunContext};
use lackpy_policy::wire::{Data, ToolFailure};
use rustpython_parser::ast::{self, Expr, Ranged, Stmt};
use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::hash::BuildHasher;
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// Largest file indexed, in bytes. Why: generated or vendored blobs are not
/// code anyone asks about, and the cap bounds one call's memory.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Most `.py` files one call reads (beyond: `TooLarge`).
/// Why: bounds the work of one call on huge trees; real projects have far
/// fewer Python files outside the skipped directories.
pub const MAX_FILES: usize = 100_000;
/// Most directories one call visits (beyond: `TooLarge`). Why: as [`MAX_FILES`].
pub const MAX_DIRS: usize = 100_000;
/// Most bytes of source one call reads (beyond: `TooLarge`).
/// Why: reading and hashing (and on a cache miss parsing) cost time and
/// memory in proportion; 64 MiB is far more Python than a workspace holds.
pub const MAX_TOTAL_BYTES: u64 = 64 * 1024 * 1024;
/// Most accounted bytes of one file's index (definitions and call sites
/// with their strings); a file beyond is skipped like one that does not
/// parse. Why: qualified names and callers repeat their enclosing names, so
/// a hostile 1 MiB file could otherwise index to gigabytes.
pub const MAX_INDEX_BYTES: usize = 16 * 1024 * 1024;
/// Most accounted bytes of all the file indexes one call holds at once
/// (beyond: `TooLarge`). Why: [`MAX_TOTAL_BYTES`] of source at
/// [`MAX_INDEX_BYTES`] per 1 MiB file would be 1 GiB of index (64 hostile
/// files of `f();f();…` took the supervisor to 1.6 GiB in one call; with
/// this bound the same call peaks near 330 MiB, the accounting counting
/// small allocations at their requested size); real code indexes to a
/// fraction of its size (CPython's standard library, 13 MiB of Python,
/// kept the whole process under 40 MiB).
pub const MAX_TOTAL_INDEX_BYTES: usize = 128 * 1024 * 1024;
/// Longest `text` of a call site, in bytes (cut at a character boundary).
/// Why: every call on one long line would otherwise copy the whole line.
pub const MAX_TEXT_BYTES: usize = 1024;
/// Most results one call returns (beyond: `TooLarge`).
pub const MAX_RESULTS: usize = 20_000;
/// Most accounted bytes of one call's results (beyond: `TooLarge`).
/// Why: the result must fit in one 16 MiB IPC frame.
pub const MAX_RESULT_BYTES: usize = 8 * 1024 * 1024;
/// Deepest syntax nesting indexed (checked by the validator's pre-scan
/// before parsing). Why: real code nests far less; deeper files could
/// exhaust the parser's stack.
pub const MAX_NESTING: usize = 200;
/// Stack of the indexing thread. Why: the parser and the walk recurse
/// once per nesting level; [`MAX_NESTING`] levels fit with a wide margin.
const STACK_BYTES: usize = 16 * 1024 * 1024;
/// Cached file indexes kept before the cache is reset.
const CACHE_ENTRIES: usize = 200_000;
/// Accounted bytes of cached indexes kept before the cache is reset.
/// Why: the cache lives as long as the server; it must not grow without
/// bound, and what it holds stays resident between runs (the accounting
/// counts small allocations at their requested size, so real memory is
/// about 1.5 times this). 64 MiB is three times the index of CPython's
/// standard library; at 256 MiB two runs of program-written files left an
/// idle `lackpy mcp` holding 400 MiB.
const CACHE_BYTES: usize = 64 * 1024 * 1024;
/// Most code-intelligence calls indexing or searching at once in this
/// process; the others wait their turn (looking at their run's deadline
/// and cancel flag). Why: each call may hold [`MAX_TOTAL_INDEX_BYTES`]
/// of index, and concurrent calls that miss the cache on the same file
/// each parse their own copy: eight concurrent runs of `lackpy mcp`
/// (its `MAX_IN_FLIGHT`) over seven program-written 1 MiB files of
/// `f();f();…` took it to 741 MiB, and a `serve` with more runs in flight
/// to more. Parsing is CPU-bound: two keep the machine's cores busy.
pub const MAX_INDEXERS: usize = 2;
/// How often a caller waiting for the indexing thread looks at the run's
/// deadline and cancel flag. Why 20 ms: as the supervisor's own cancel poll.
const WAIT_SLICE: std::time::Duration = std::time::Duration::from_millis(20);

/// The two tools' names.
pub const TOOLS: &[&str] = &["find_definitions", "find_callers"];

/// Whether `name` is one of this module's tools.
pub fn is_codeintel(name: &str) -> bool {
    TOOLS.contains(&name)
}

/// A definition, independent of the file it is in.
#[derive(Debug, Clone, PartialEq)]
struct Def {
    line: u32,
    kind: &'static str,
    name: String,
    qualname: String,
    signature: String,
}

/// A call site.
#[derive(Debug, Clone, PartialEq)]
struct CallSite {
    line: u32,
    /// Dotted callee (`self.load`, `os.path.join`), or its last attribute
    /// name alone when the receiver is not a plain dotted name.
    callee: String,
    /// Shared by every call site of the same scope.
    caller: Arc<str>,
    /// Shared by every call site on the same line.
    text: Arc<str>,
}

/// Everything the tools need from one file.
#[derive(Debug, Default)]
struct FileIndex {
    defs: Vec<Def>,
    calls: Vec<CallSite>,
    /// Accounted size (structures and strings), for the bounds.
    bytes: usize,
}

struct Cache {
    hasher: RandomState,
    files: HashMap<(u64, usize), Arc<FileIndex>>,
    bytes: usize,
    /// Contents some call is indexing now (not yet in `files`).
    parsing: HashSet<(u64, usize)>,
}

/// The [`MAX_INDEXERS`] gate: how many calls hold a turn.
static TURNS: Mutex<usize> = Mutex::new(0);
static TURN_FREED: Condvar = Condvar::new();

/// One call's turn at indexing; given back when dropped.
struct Turn;

impl Turn {
    /// Wait for a turn, giving up (with the run's `Timeout` or
    /// `Cancelled`) when the run ends first.
    fn take(run: &RunContext) -> Result<Turn, ToolFailure> {
        let mut busy = TURNS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            if *busy < MAX_INDEXERS {
                *busy += 1;
                return Ok(Turn);
            }
            run.check()?;
            busy = match TURN_FREED.wait_timeout(busy, WAIT_SLICE) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut busy = TURNS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *busy = busy.saturating_sub(1);
        TURN_FREED.notify_one();
    }
}

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| {
        Mutex::new(Cache {
            hasher: RandomState::new(),
            files: HashMap::new(),
            bytes: 0,
            parsing: HashSet::new(),
        })
    })
}

/// Run one call of a code-intelligence tool.
///
/// # Errors
/// `BadArgument` for a name that is not a (dotted) identifier, `TooLarge`
/// beyond [`MAX_RESULTS`], `ToolFailed` for I/O failures.
pub fn call(
    function: &str,
    name: &str,
    ws: &Workspace,
    run: &RunContext,
) -> Result<Data, ToolFailure> {
    let tool = function;
    let which = function.to_string();
    let name = name.to_string();
    // `find_definitions("src/a.py")`: a file selector, checked (and its
    // `..` or absolute path refused) before any indexing.
    let selector = match function {
        "find_definitions" if is_file_selector(&name) => Some(FileSelector::parse(&name)?),
        _ => None,
    };
    if selector.is_none() && !valid_name(&name) {
        let also = if function == "find_definitions" {
            ", or a .py file, folder/ or glob pattern such as 'src/a.py' or 'tests/*.py'"
        } else {
            ""
        };
        return Err(ToolFailure::new(
            "BadArgument",
            format!("{tool}() argument 'name' must be a Python name such as 'load' or 'Config.load'{also}, not {name:?}"),
        ));
    }
    let root = open_root(ws)?;
    let ctx = run.clone();
    let work = move || -> Result<Data, ToolFailure> {
        // Held by this thread until its index is dropped, even when the
        // caller has given up on it (the thread stops after its file).
        let _turn = Turn::take(&ctx)?;
        let indexed = index_tree(&root, &ctx)?;
        // The search is bounded by the index, but not cheap (a selector
        // pattern is matched against every file's path): it looks at the
        // clock too, so the thread stops with the run.
        let mut clock = Interrupt::new(&ctx);
        match which.as_str() {
            "find_definitions" => match &selector {
                Some(sel) => definitions_in(&indexed, sel, &mut clock),
                None => definitions(&indexed, &name, &mut clock),
            },
            "find_callers" => callers(&indexed, &name, &mut clock),
            other => Err(ToolFailure::new(
                "ToolFailed",
                format!("no code-intelligence function {other:?}"),
            )),
        }
    };
    // The indexer runs on its own thread (a large stack for the parser).
    // This thread waits for it and gives up when the run's deadline passes
    // or it is cancelled; the indexer sees the same and stops after the
    // file it is parsing (its result is then dropped).
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("codeintel".into())
        .stack_size(STACK_BYTES)
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
                .unwrap_or_else(|_| Err(ToolFailure::new("ToolFailed", "the indexer failed")));
            let _ = tx.send(r);
        })
        .map_err(|e| {
            ToolFailure::new(
                "ToolFailed",
                format!("{tool}: cannot start the indexer: {e}"),
            )
        })?;
    loop {
        match rx.recv_timeout(WAIT_SLICE) {
            Ok(r) => {
                return r.map_err(|mut e| {
                    e.message = format!("{tool}(): {}", e.message);
                    e
                })
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                run.check().map_err(|mut e| {
                    e.message = format!("{tool}(): {}", e.message);
                    e
                })?;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(ToolFailure::new(
                    "ToolFailed",
                    format!("{tool}: the indexer failed"),
                ))
            }
        }
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 512
        && name.split('.').all(|part| {
            let mut cs = part.chars();
            cs.next().is_some_and(|c| c == '_' || c.is_alphabetic())
                && cs.all(|c| c == '_' || c.is_alphanumeric())
        })
}

fn dict(pairs: Vec<(&str, Data)>) -> Data {
    Data::Dict(
        pairs
            .into_iter()
            .map(|(k, v)| (Data::Str(k.to_string()), v))
            .collect(),
    )
}

fn too_many() -> ToolFailure {
    ToolFailure::new(
        "TooLarge",
        format!(
            "found more than {MAX_RESULTS} results (MAX_RESULTS); ask for a more specific name"
        ),
    )
}

fn too_big() -> ToolFailure {
    ToolFailure::new(
        "TooLarge",
        format!("found more than {MAX_RESULT_BYTES} bytes of results (MAX_RESULT_BYTES); ask for a more specific name"),
    )
}

/// Count one result against [`MAX_RESULTS`] and [`MAX_RESULT_BYTES`].
fn count_result(n: usize, bytes: &mut usize, strings: &[&str]) -> Result<(), ToolFailure> {
    if n >= MAX_RESULTS {
        return Err(too_many());
    }
    *bytes = bytes.saturating_add(64 + strings.iter().map(|s| s.len()).sum::<usize>());
    if *bytes > MAX_RESULT_BYTES {
        return Err(too_big());
    }
    Ok(())
}

fn definitions(
    files: &[(String, Arc<FileIndex>)],
    name: &str,
    clock: &mut Interrupt,
) -> Result<Data, ToolFailure> {
    let mut out = Vec::new();
    let mut bytes = 0;
    for (file, idx) in files {
        for d in &idx.defs {
            clock.tick()?;
            if d.name == name || d.qualname == name {
                push_def(&mut out, &mut bytes, file, d)?;
            }
        }
    }
    Ok(Data::List(out))
}

/// Add definition `d` of `file` to a `find_definitions` answer, within
/// the result bounds.
fn push_def(
    out: &mut Vec<Data>,
    bytes: &mut usize,
    file: &str,
    d: &Def,
) -> Result<(), ToolFailure> {
    count_result(out.len(), bytes, &[file, &d.qualname, &d.signature])?;
    out.push(dict(vec![
        ("file", Data::Str(file.to_string())),
        ("line", Data::Int(i64::from(d.line))),
        ("kind", Data::Str(d.kind.to_string())),
        ("name", Data::Str(d.qualname.clone())),
        ("signature", Data::Str(d.signature.clone())),
    ]));
    Ok(())
}

/// Whether `find_definitions`' argument names files rather than a
/// definition: it holds a `/` or a glob character, or ends in `.py` (a
/// module is asked about by its file name; no definition is called `py`).
fn is_file_selector(arg: &str) -> bool {
    arg.contains('/') || arg.contains(GLOB_CHARS) || arg.ends_with(".py")
}

/// The files a `find_definitions` selector asks about.
struct FileSelector {
    /// As given, for messages.
    text: String,
    pattern: super::glob::Pattern,
    /// No glob character: a path that must name an indexed file or folder.
    exact: bool,
}

impl FileSelector {
    /// A `find_files` pattern, matched against the indexed files' relative
    /// paths (and the folders holding them); one without `/` matches a file
    /// name anywhere, as in `.gitignore` (`test_*.py`, `utils.py`).
    ///
    /// # Errors
    /// What [`super::glob::parse_pattern`] refuses: `PathOutsideWorkspace`
    /// for absolute paths and `..`, `BadArgument` for the rest.
    fn parse(arg: &str) -> Result<Self, ToolFailure> {
        let anywhere;
        let text = if arg.trim_end_matches('/').contains('/') {
            arg
        } else {
            anywhere = format!("**/{arg}");
            &anywhere
        };
        let pattern = super::glob::parse_pattern(text).map_err(|mut e| {
            e.message = e.message.replace("find_files() pattern", "the pattern");
            e
        })?;
        Ok(FileSelector {
            text: arg.to_string(),
            pattern,
            exact: !arg.contains(GLOB_CHARS),
        })
    }
}

/// Every definition in the files `sel` selects, by (file, line). A path
/// with no glob character that selects no indexed file is an error (a
/// mistyped path must not look like a file without definitions).
fn definitions_in(
    files: &[(String, Arc<FileIndex>)],
    sel: &FileSelector,
    clock: &mut Interrupt,
) -> Result<Data, ToolFailure> {
    let mut out = Vec::new();
    let mut bytes = 0;
    let mut any_file = false;
    for (file, idx) in files {
        // Matching one path against a hostile pattern can take a
        // millisecond (a 240-character literal after a `*`, against
        // 250-character directory names): look at the clock before each.
        clock.check()?;
        if !sel.pattern.selects_file(file) {
            continue;
        }
        any_file = true;
        for d in &idx.defs {
            push_def(&mut out, &mut bytes, file, d)?;
        }
    }
    if !any_file && sel.exact {
        return Err(ToolFailure::new(
            "FileNotFound",
            format!(
                "no indexed Python file is at or under {:?} (hidden files, __pycache__, virtual environments, files over 1 MiB and symlinks are not indexed); find_files(\"**/*.py\") lists the Python files",
                sel.text
            ),
        ));
    }
    Ok(Data::List(out))
}

fn callee_matches(callee: &str, name: &str) -> bool {
    if callee == name {
        return true;
    }
    if name.contains('.') {
        // `Config.load` matches `Config.load(...)` and `mod.Config.load(...)`.
        callee.len() > name.len()
            && callee.ends_with(name)
            && callee.as_bytes()[callee.len() - name.len() - 1] == b'.'
    } else {
        callee.rsplit('.').next() == Some(name)
    }
}

fn callers(
    files: &[(String, Arc<FileIndex>)],
    name: &str,
    clock: &mut Interrupt,
) -> Result<Data, ToolFailure> {
    let mut out = Vec::new();
    let mut bytes = 0;
    for (file, idx) in files {
        for c in &idx.calls {
            clock.tick()?;
            if callee_matches(&c.callee, name) {
                count_result(out.len(), &mut bytes, &[file, &c.caller, &c.text])?;
                out.push(dict(vec![
                    ("file", Data::Str(file.clone())),
                    ("line", Data::Int(i64::from(c.line))),
                    ("caller", Data::Str(c.caller.to_string())),
                    ("text", Data::Str(c.text.to_string())),
                ]));
            }
        }
    }
    Ok(Data::List(out))
}

// ---------------------------------------------------------------------------
// Finding and reading the files.

fn cstr(s: &str) -> Result<CString, ToolFailure> {
    CString::new(s).map_err(|_| ToolFailure::new("ToolFailed", "path with a NUL byte"))
}

fn list_dir(
    fd: &OwnedFd,
    rel: &str,
    clock: &mut Interrupt,
) -> Result<Vec<(String, std::fs::FileType)>, ToolFailure> {
    // The descriptor was opened beneath the workspace without following
    // symlinks; listing it through /proc names exactly that directory.
    let Ok(rd) = std::fs::read_dir(format!("/proc/self/fd/{}", fd.as_raw_fd())) else {
        return Ok(Vec::new());
    };
    let mut v: Vec<(String, std::fs::FileType)> = Vec::new();
    for (read, e) in rd.enumerate() {
        clock.tick()?;
        if read >= super::glob::MAX_DIR_ENTRIES {
            return Err(super::glob::too_many_entries(rel));
        }
        let Ok(e) = e else { continue };
        let Ok(name) = e.file_name().into_string() else {
            continue;
        };
        let Ok(ft) = e.file_type() else { continue };
        v.push((name, ft));
    }
    v.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(v)
}

const SKIP_DIRS: &[&str] = &["__pycache__", "node_modules", "site-packages"];

/// The workspace root as a readable directory descriptor.
fn open_root(ws: &Workspace) -> Result<OwnedFd, ToolFailure> {
    openat2(ws.fd(), &cstr(".")?, libc::O_RDONLY | libc::O_DIRECTORY, 0).map_err(|e| {
        ToolFailure::new(
            "ToolFailed",
            format!(
                "cannot open the workspace: {}",
                std::io::Error::from_raw_os_error(e)
            ),
        )
    })
}

/// Walk the tree beneath `root` and index every `.py` file (from the cache
/// when its content was seen before). At most one directory and one file
/// descriptor are open at a time: pending directories are kept as
/// workspace-relative paths and reopened beneath `root` (`RESOLVE_BENEATH`,
/// final component `O_NOFOLLOW`), so no tree shape can exhaust descriptors.
fn index_tree(
    root: &OwnedFd,
    run: &RunContext,
) -> Result<Vec<(String, Arc<FileIndex>)>, ToolFailure> {
    let mut clock = Interrupt::new(run);
    let mut out = Vec::new();
    let mut stack: Vec<String> = vec![String::new()];
    let mut dirs = 0usize;
    let mut files = 0usize;
    let mut total = 0u64;
    let mut index_total = 0usize;
    while let Some(rel) = stack.pop() {
        clock.tick()?;
        dirs += 1;
        if dirs > MAX_DIRS {
            return Err(ToolFailure::new(
                "TooLarge",
                format!("the workspace has more than {MAX_DIRS} directories to index (MAX_DIRS)"),
            ));
        }
        let fd = if rel.is_empty() {
            match root.try_clone() {
                Ok(fd) => fd,
                Err(_) => continue,
            }
        } else {
            let Ok(c) = cstr(&rel) else { continue };
            match openat2(
                root.as_raw_fd(),
                &c,
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
                0,
            ) {
                Ok(fd) => fd,
                Err(_) => continue,
            }
        };
        let entries = list_dir(&fd, &rel, &mut clock)?;
        if !rel.is_empty() && entries.iter().any(|(n, _)| n == "pyvenv.cfg") {
            continue; // a virtual environment
        }
        let mut subdirs = Vec::new();
        for (name, ft) in entries {
            clock.tick()?;
            if name.starts_with('.') || ft.is_symlink() {
                continue;
            }
            let path = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if ft.is_dir() {
                if !SKIP_DIRS.contains(&name.as_str()) {
                    subdirs.push(path);
                }
            } else if ft.is_file() && name.ends_with(".py") {
                // A file may cost a parse: look at the clock before each.
                clock.check()?;
                if files >= MAX_FILES {
                    return Err(ToolFailure::new(
                        "TooLarge",
                        format!("the workspace has more than {MAX_FILES} Python files to index (MAX_FILES)"),
                    ));
                }
                let Ok(c) = cstr(&name) else { continue };
                // A regular file only: a file swapped for a device node or
                // a FIFO since the listing is never opened for reading.
                let Ok((f, _)) = super::fs::open_regular(fd.as_raw_fd(), &c, libc::O_NOFOLLOW)
                else {
                    continue;
                };
                files += 1;
                if let Some(src) = read_file(f) {
                    total = total.saturating_add(src.len() as u64);
                    if total > MAX_TOTAL_BYTES {
                        return Err(ToolFailure::new(
                            "TooLarge",
                            format!("the workspace has more than {MAX_TOTAL_BYTES} bytes of Python to index (MAX_TOTAL_BYTES)"),
                        ));
                    }
                    let idx = index_cached(&src, &path, run)?;
                    index_total = index_total.saturating_add(idx.bytes);
                    if index_total > MAX_TOTAL_INDEX_BYTES {
                        return Err(ToolFailure::new(
                            "TooLarge",
                            format!("the workspace's Python indexes to more than {MAX_TOTAL_INDEX_BYTES} bytes (MAX_TOTAL_INDEX_BYTES)"),
                        ));
                    }
                    out.push((path.clone(), idx));
                }
            }
        }
        // Depth-first, names in order (the final sort makes order exact).
        stack.extend(subdirs.into_iter().rev());
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn read_file(fd: OwnedFd) -> Option<String> {
    let mut f = std::fs::File::from(fd);
    let meta = f.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return None;
    }
    let mut buf = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    (&mut f)
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut buf)
        .ok()?;
    if buf.len() as u64 > MAX_FILE_BYTES {
        return None;
    }
    String::from_utf8(buf).ok()
}

/// One file's index, from the cache when this exact content was indexed
/// before, or is being indexed by another call (waited for, looking at
/// the run's clock: concurrent calls that missed the cache each parsed
/// their own copy).
fn index_cached(src: &str, path: &str, run: &RunContext) -> Result<Arc<FileIndex>, ToolFailure> {
    let mut c = lock_cache();
    let key = (c.hasher.hash_one(src.as_bytes()), src.len());
    loop {
        if let Some(idx) = c.files.get(&key) {
            return Ok(idx.clone());
        }
        if !c.parsing.contains(&key) {
            break;
        }
        run.check()?;
        c = match PARSED.wait_timeout(c, WAIT_SLICE) {
            Ok((g, _)) => g,
            Err(p) => p.into_inner().0,
        };
    }
    c.parsing.insert(key);
    drop(c);
    // Clears the mark however the parse ends (a panic included).
    let mark = Parsing(key);
    let idx = Arc::new(index_source(src, path).unwrap_or_default());
    let mut c = lock_cache();
    if c.files.len() >= CACHE_ENTRIES || c.bytes.saturating_add(idx.bytes) > CACHE_BYTES {
        c.files.clear();
        c.bytes = 0;
    }
    if c.files.insert(key, idx.clone()).is_none() {
        c.bytes = c.bytes.saturating_add(idx.bytes);
    }
    drop(c);
    drop(mark);
    Ok(idx)
}

fn lock_cache() -> std::sync::MutexGuard<'static, Cache> {
    cache()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Wakes the calls waiting for a file another call is indexing.
static PARSED: Condvar = Condvar::new();

/// A file being indexed by this call ([`Cache::parsing`]).
struct Parsing((u64, usize));

impl Drop for Parsing {
    fn drop(&mut self) {
        lock_cache().parsing.remove(&self.0);
        PARSED.notify_all();
    }
}

// ---------------------------------------------------------------------------
// Indexing one file.

/// Index one source text; `None` when it nests too deeply, does not parse
/// or indexes to more than [`MAX_INDEX_BYTES`].
fn index_source(src: &str, path: &str) -> Option<FileIndex> {
    lackpy_policy::lang::prescan::scan(src, MAX_NESTING).ok()?;
    let suite = rustpython_parser::parse(src, rustpython_parser::Mode::Module, path).ok()?;
    let body = match suite {
        ast::Mod::Module(m) => m.body,
        _ => return None,
    };
    let mut ix = Indexer {
        src,
        line_starts: std::iter::once(0)
            .chain(src.match_indices('\n').map(|(i, _)| i + 1))
            .collect(),
        scope: Vec::new(),
        caller: None,
        line_text: HashMap::new(),
        out: FileIndex::default(),
        over: false,
    };
    ix.stmts(&body);
    (!ix.over).then_some(ix.out)
}

/// `s` cut to at most `max` bytes, at a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The parts of a `def` / `async def` the indexer needs.
struct FnParts<'a> {
    range: rustpython_parser::text_size::TextRange,
    name: &'a str,
    args: &'a ast::Arguments,
    returns: Option<&'a Expr>,
    decorators: &'a [Expr],
    body: &'a [Stmt],
    is_async: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum ScopeKind {
    Class,
    Function,
}

struct Indexer<'a> {
    src: &'a str,
    line_starts: Vec<usize>,
    scope: Vec<(String, ScopeKind)>,
    /// The current scope's caller name, shared by its call sites.
    caller: Option<Arc<str>>,
    /// Each line's `text`, shared by the call sites on it.
    line_text: HashMap<u32, Arc<str>>,
    out: FileIndex,
    /// Set once the index grew past [`MAX_INDEX_BYTES`]: the walk stops
    /// adding and the file is skipped.
    over: bool,
}

impl Indexer<'_> {
    /// A `try` (or `try*`) statement's parts.
    fn try_block(
        &mut self,
        body: &[Stmt],
        handlers: &[ast::ExceptHandler],
        orelse: &[Stmt],
        finalbody: &[Stmt],
    ) {
        self.stmts(body);
        for h in handlers {
            let ast::ExceptHandler::ExceptHandler(h) = h;
            if let Some(t) = &h.type_ {
                self.expr(t);
            }
            self.stmts(&h.body);
        }
        self.stmts(orelse);
        self.stmts(finalbody);
    }

    fn line_of(&self, offset: usize) -> u32 {
        let i = self.line_starts.partition_point(|&s| s <= offset);
        u32::try_from(i).unwrap_or(u32::MAX)
    }

    fn text(&self, r: rustpython_parser::text_size::TextRange) -> &str {
        self.src
            .get(usize::from(r.start())..usize::from(r.end()))
            .unwrap_or("")
    }

    /// Source text of a node on one line (runs of whitespace collapsed).
    fn flat(&self, r: rustpython_parser::text_size::TextRange) -> String {
        let t = self.text(r);
        if t.contains('\n') {
            t.split_whitespace().collect::<Vec<_>>().join(" ")
        } else {
            t.to_string()
        }
    }

    fn qual(&self, name: &str) -> String {
        let mut s = String::new();
        for (n, _) in &self.scope {
            s.push_str(n);
            s.push('.');
        }
        s.push_str(name);
        s
    }

    fn caller(&mut self) -> Arc<str> {
        if let Some(c) = &self.caller {
            return c.clone();
        }
        let c: Arc<str> = if self.scope.is_empty() {
            Arc::from("<module>")
        } else {
            Arc::from(
                self.scope
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join("."),
            )
        };
        self.account(c.len());
        self.caller = Some(c.clone());
        c
    }

    fn enter_scope(&mut self, name: &str, kind: ScopeKind) {
        self.scope.push((name.to_string(), kind));
        self.caller = None;
    }

    fn leave_scope(&mut self) {
        self.scope.pop();
        self.caller = None;
    }

    /// Count `bytes` against [`MAX_INDEX_BYTES`].
    fn account(&mut self, bytes: usize) {
        self.out.bytes = self.out.bytes.saturating_add(bytes);
        if self.out.bytes > MAX_INDEX_BYTES {
            self.over = true;
        }
    }

    fn add_def(&mut self, def: Def) {
        if self.over {
            return;
        }
        self.account(
            std::mem::size_of::<Def>() + def.name.len() + def.qualname.len() + def.signature.len(),
        );
        self.out.defs.push(def);
    }

    fn signature(
        &self,
        name: &str,
        a: &ast::Arguments,
        returns: Option<&Expr>,
        is_async: bool,
    ) -> String {
        let param = |p: &ast::ArgWithDefault| {
            let mut s = p.def.arg.to_string();
            if let Some(an) = &p.def.annotation {
                s.push_str(": ");
                s.push_str(&self.flat(an.range()));
            }
            if let Some(d) = &p.default {
                s.push_str(if p.def.annotation.is_some() {
                    " = "
                } else {
                    "="
                });
                s.push_str(&self.flat(d.range()));
            }
            s
        };
        let star = |prefix: &str, p: &ast::Arg| {
            let mut s = format!("{prefix}{}", p.arg);
            if let Some(an) = &p.annotation {
                s.push_str(": ");
                s.push_str(&self.flat(an.range()));
            }
            s
        };
        let mut parts: Vec<String> = a.posonlyargs.iter().map(param).collect();
        if !a.posonlyargs.is_empty() {
            parts.push("/".to_string());
        }
        parts.extend(a.args.iter().map(param));
        match &a.vararg {
            Some(v) => parts.push(star("*", v)),
            None if !a.kwonlyargs.is_empty() => parts.push("*".to_string()),
            None => {}
        }
        parts.extend(a.kwonlyargs.iter().map(param));
        if let Some(k) = &a.kwarg {
            parts.push(star("**", k));
        }
        let mut s = format!(
            "{}def {name}({})",
            if is_async { "async " } else { "" },
            parts.join(", ")
        );
        if let Some(r) = returns {
            s.push_str(" -> ");
            s.push_str(&self.flat(r.range()));
        }
        s
    }

    fn function(&mut self, f: FnParts<'_>) {
        let FnParts {
            range,
            name,
            args,
            returns,
            decorators,
            body,
            is_async,
        } = f;
        // Decorators, defaults and annotations run in the enclosing scope.
        self.exprs(decorators);
        for p in args
            .posonlyargs
            .iter()
            .chain(&args.args)
            .chain(&args.kwonlyargs)
        {
            if let Some(d) = &p.default {
                self.expr(d);
            }
        }
        let kind = match self.scope.last() {
            Some((_, ScopeKind::Class)) => "method",
            _ => "function",
        };
        // Past the bound nothing more is built (the file is skipped).
        if !self.over {
            let def = Def {
                line: self.def_line(range, decorators),
                kind,
                name: name.to_string(),
                qualname: self.qual(name),
                signature: self.signature(name, args, returns, is_async),
            };
            self.add_def(def);
        }
        self.enter_scope(name, ScopeKind::Function);
        self.stmts(body);
        self.leave_scope();
    }

    /// The line of the `def`/`class` keyword (after any decorators).
    fn def_line(&self, range: rustpython_parser::text_size::TextRange, decorators: &[Expr]) -> u32 {
        let mut start = usize::from(range.start());
        if let Some(last) = decorators
            .iter()
            .map(|d| usize::from(d.range().end()))
            .max()
        {
            if last > start {
                // The range includes the decorators: skip to the next line
                // that is not a decorator.
                start = last;
                if let Some(nl) = self.src.get(start..).and_then(|t| t.find('\n')) {
                    start += nl + 1;
                }
                while let Some(rest) = self.src.get(start..) {
                    let trimmed = rest.trim_start_matches([' ', '\t']);
                    if trimmed.starts_with('@')
                        || trimmed.starts_with('#')
                        || trimmed.starts_with('\n')
                    {
                        match rest.find('\n') {
                            Some(nl) => start += nl + 1,
                            None => break,
                        }
                    } else {
                        break;
                    }
                }
            }
        }
        self.line_of(start)
    }

    fn stmts(&mut self, body: &[Stmt]) {
        for s in body {
            self.stmt(s);
        }
    }

    fn exprs(&mut self, es: &[Expr]) {
        for e in es {
            self.expr(e);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::FunctionDef(f) => self.function(FnParts {
                range: f.range,
                name: f.name.as_str(),
                args: &f.args,
                returns: f.returns.as_deref(),
                decorators: &f.decorator_list,
                body: &f.body,
                is_async: false,
            }),
            Stmt::AsyncFunctionDef(f) => self.function(FnParts {
                range: f.range,
                name: f.name.as_str(),
                args: &f.args,
                returns: f.returns.as_deref(),
                decorators: &f.decorator_list,
                body: &f.body,
                is_async: true,
            }),
            Stmt::ClassDef(c) => {
                self.exprs(&c.decorator_list);
                self.exprs(&c.bases);
                for k in &c.keywords {
                    self.expr(&k.value);
                }
                if !self.over {
                    let mut bases: Vec<String> =
                        c.bases.iter().map(|b| self.flat(b.range())).collect();
                    bases.extend(c.keywords.iter().map(|k| self.flat(k.range)));
                    let signature = if bases.is_empty() {
                        format!("class {}", c.name)
                    } else {
                        format!("class {}({})", c.name, bases.join(", "))
                    };
                    let def = Def {
                        line: self.def_line(c.range, &c.decorator_list),
                        kind: "class",
                        name: c.name.to_string(),
                        qualname: self.qual(c.name.as_str()),
                        signature,
                    };
                    self.add_def(def);
                }
                self.enter_scope(c.name.as_str(), ScopeKind::Class);
                self.stmts(&c.body);
                self.leave_scope();
            }
            Stmt::Return(x) => {
                if let Some(v) = &x.value {
                    self.expr(v);
                }
            }
            Stmt::Delete(x) => self.exprs(&x.targets),
            Stmt::Assign(x) => {
                self.exprs(&x.targets);
                self.expr(&x.value);
            }
            Stmt::TypeAlias(x) => self.expr(&x.value),
            Stmt::AugAssign(x) => {
                self.expr(&x.target);
                self.expr(&x.value);
            }
            Stmt::AnnAssign(x) => {
                self.expr(&x.target);
                if let Some(v) = &x.value {
                    self.expr(v);
                }
            }
            Stmt::For(x) => {
                self.expr(&x.target);
                self.expr(&x.iter);
                self.stmts(&x.body);
                self.stmts(&x.orelse);
            }
            Stmt::AsyncFor(x) => {
                self.expr(&x.target);
                self.expr(&x.iter);
                self.stmts(&x.body);
                self.stmts(&x.orelse);
            }
            Stmt::While(x) => {
                self.expr(&x.test);
                self.stmts(&x.body);
                self.stmts(&x.orelse);
            }
            Stmt::If(x) => {
                self.expr(&x.test);
                self.stmts(&x.body);
                self.stmts(&x.orelse);
            }
            Stmt::With(x) => {
                for i in &x.items {
                    self.expr(&i.context_expr);
                }
                self.stmts(&x.body);
            }
            Stmt::AsyncWith(x) => {
                for i in &x.items {
                    self.expr(&i.context_expr);
                }
                self.stmts(&x.body);
            }
            Stmt::Match(x) => {
                self.expr(&x.subject);
                for c in &x.cases {
                    if let Some(g) = &c.guard {
                        self.expr(g);
                    }
                    self.stmts(&c.body);
                }
            }
            Stmt::Raise(x) => {
                if let Some(e) = &x.exc {
                    self.expr(e);
                }
                if let Some(e) = &x.cause {
                    self.expr(e);
                }
            }
            Stmt::Try(x) => self.try_block(&x.body, &x.handlers, &x.orelse, &x.finalbody),
            Stmt::TryStar(x) => self.try_block(&x.body, &x.handlers, &x.orelse, &x.finalbody),
            Stmt::Assert(x) => {
                self.expr(&x.test);
                if let Some(m) = &x.msg {
                    self.expr(m);
                }
            }
            Stmt::Expr(x) => self.expr(&x.value),
            // Statements without a child statement or expression.
            Stmt::Import(_) | Stmt::ImportFrom(_) | Stmt::Global(_) | Stmt::Nonlocal(_) => {}
            Stmt::Pass(_) | Stmt::Break(_) | Stmt::Continue(_) => {}
        }
    }

    /// `a.b.c` for a dotted name chain, else `None`.
    fn dotted(e: &Expr) -> Option<String> {
        match e {
            Expr::Name(n) => Some(n.id.to_string()),
            Expr::Attribute(a) => Self::dotted(&a.value).map(|mut s| {
                s.push('.');
                s.push_str(a.attr.as_str());
                s
            }),
            _ => None,
        }
    }

    fn call_site(&mut self, c: &ast::ExprCall) {
        if self.over {
            return;
        }
        let callee = match Self::dotted(&c.func) {
            Some(d) => d,
            None => match c.func.as_ref() {
                Expr::Attribute(a) => a.attr.to_string(),
                _ => return,
            },
        };
        let start = usize::from(c.range.start());
        let line = self.line_of(start);
        let ls = self
            .line_starts
            .get(line.saturating_sub(1) as usize)
            .copied()
            .unwrap_or(0);
        // The line's end from the line table (not a scan: a long line with
        // many calls must not cost its length per call).
        let le = self
            .line_starts
            .get(line as usize)
            .map_or(self.src.len(), |next| next.saturating_sub(1))
            .max(ls);
        let text = match self.line_text.get(&line) {
            Some(t) => t.clone(),
            None => {
                let t: Arc<str> = Arc::from(cut(
                    self.src.get(ls..le).unwrap_or("").trim(),
                    MAX_TEXT_BYTES,
                ));
                // The string and its table entry.
                self.account(t.len() + 32);
                self.line_text.insert(line, t.clone());
                t
            }
        };
        let caller = self.caller();
        self.account(std::mem::size_of::<CallSite>() + callee.len());
        let site = CallSite {
            line,
            callee,
            caller,
            text,
        };
        self.out.calls.push(site);
    }

    fn comps(&mut self, gens: &[ast::Comprehension]) {
        for g in gens {
            self.expr(&g.target);
            self.expr(&g.iter);
            self.exprs(&g.ifs);
        }
    }

    fn expr(&mut self, e: &Expr) {
        match e {
            Expr::Call(c) => {
                self.call_site(c);
                self.expr(&c.func);
                self.exprs(&c.args);
                for k in &c.keywords {
                    self.expr(&k.value);
                }
            }
            Expr::BoolOp(x) => self.exprs(&x.values),
            Expr::NamedExpr(x) => {
                self.expr(&x.target);
                self.expr(&x.value);
            }
            Expr::BinOp(x) => {
                self.expr(&x.left);
                self.expr(&x.right);
            }
            Expr::UnaryOp(x) => self.expr(&x.operand),
            Expr::Lambda(x) => {
                for p in x
                    .args
                    .posonlyargs
                    .iter()
                    .chain(&x.args.args)
                    .chain(&x.args.kwonlyargs)
                {
                    if let Some(d) = &p.default {
                        self.expr(d);
                    }
                }
                self.expr(&x.body);
            }
            Expr::IfExp(x) => {
                self.expr(&x.test);
                self.expr(&x.body);
                self.expr(&x.orelse);
            }
            Expr::Dict(x) => {
                for k in x.keys.iter().flatten() {
                    self.expr(k);
                }
                self.exprs(&x.values);
            }
            Expr::Set(x) => self.exprs(&x.elts),
            Expr::ListComp(x) => {
                self.expr(&x.elt);
                self.comps(&x.generators);
            }
            Expr::SetComp(x) => {
                self.expr(&x.elt);
                self.comps(&x.generators);
            }
            Expr::DictComp(x) => {
                self.expr(&x.key);
                self.expr(&x.value);
                self.comps(&x.generators);
            }
            Expr::GeneratorExp(x) => {
                self.expr(&x.elt);
                self.comps(&x.generators);
            }
            Expr::Await(x) => self.expr(&x.value),
            Expr::Yield(x) => {
                if let Some(v) = &x.value {
                    self.expr(v);
                }
            }
            Expr::YieldFrom(x) => self.expr(&x.value),
            Expr::Compare(x) => {
                self.expr(&x.left);
                self.exprs(&x.comparators);
            }
            Expr::FormattedValue(x) => {
                self.expr(&x.value);
                if let Some(f) = &x.format_spec {
                    self.expr(f);
                }
            }
            Expr::JoinedStr(x) => self.exprs(&x.values),
            Expr::Attribute(x) => self.expr(&x.value),
            Expr::Subscript(x) => {
                self.expr(&x.value);
                self.expr(&x.slice);
            }
            Expr::Starred(x) => self.expr(&x.value),
            Expr::List(x) => self.exprs(&x.elts),
            Expr::Tuple(x) => self.exprs(&x.elts),
            Expr::Slice(x) => {
                for p in [&x.lower, &x.upper, &x.step].into_iter().flatten() {
                    self.expr(p);
                }
            }
            Expr::Constant(_) | Expr::Name(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lackpy_policy::config::ToolSpec;

    /// A call as the dispatcher makes it, outside any run.
    fn call(spec: &ToolSpec, args: &[Data], ws: &Workspace) -> Result<Data, ToolFailure> {
        call_in(&RunContext::default(), spec, args, ws)
    }

    /// A call as the dispatcher makes it, in run `run`.
    fn call_in(
        run: &RunContext,
        spec: &ToolSpec,
        args: &[Data],
        ws: &Workspace,
    ) -> Result<Data, ToolFailure> {
        let f = crate::providers::builtin_function(spec).unwrap_or_else(|| spec.name.clone());
        crate::tools::call(&f, spec, args, ws, run)
    }

    const SRC: &str = r#"import os

def load(path: str, strict: bool = False) -> dict:
    """Load."""
    text = os.path.join("a", path)
    return parse(text)

@decorator(1)
class Config(Base, metaclass=Meta):
    x = make_default()

    @staticmethod
    def load(p, /, q, *args, k=1, **kw):
        def inner():
            return load(p)
        return [load(x) for x in inner()]

    async def fetch(self):
        await self.load(1)

load("top")
Config.load(
    2)
"#;

    fn idx() -> FileIndex {
        index_source(SRC, "m.py").unwrap()
    }

    #[test]
    fn definitions_with_kinds_and_signatures() {
        let ix = idx();
        let got: Vec<(u32, &str, &str, &str)> = ix
            .defs
            .iter()
            .map(|d| (d.line, d.kind, d.qualname.as_str(), d.signature.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    3,
                    "function",
                    "load",
                    "def load(path: str, strict: bool = False) -> dict"
                ),
                (9, "class", "Config", "class Config(Base, metaclass=Meta)"),
                (
                    13,
                    "method",
                    "Config.load",
                    "def load(p, /, q, *args, k=1, **kw)"
                ),
                (14, "function", "Config.load.inner", "def inner()"),
                (18, "method", "Config.fetch", "async def fetch(self)"),
            ]
        );
    }

    #[test]
    fn call_sites_with_callers() {
        let ix = idx();
        let got: Vec<(u32, &str, &str)> = ix
            .calls
            .iter()
            .filter(|c| callee_matches(&c.callee, "load"))
            .map(|c| (c.line, &*c.caller, &*c.text))
            .collect();
        assert_eq!(
            got,
            vec![
                (15, "Config.load.inner", "return load(p)"),
                (16, "Config.load", "return [load(x) for x in inner()]"),
                (19, "Config.fetch", "await self.load(1)"),
                (21, "<module>", "load(\"top\")"),
                (22, "<module>", "Config.load("),
            ]
        );
        let dotted: Vec<u32> = ix
            .calls
            .iter()
            .filter(|c| callee_matches(&c.callee, "Config.load"))
            .map(|c| c.line)
            .collect();
        assert_eq!(dotted, vec![22]);
        assert!(ix
            .calls
            .iter()
            .any(|c| c.callee == "os.path.join" && &*c.caller == "load"));
        assert!(ix
            .calls
            .iter()
            .any(|c| c.callee == "make_default" && &*c.caller == "Config"));
        assert!(ix
            .calls
            .iter()
            .any(|c| c.callee == "decorator" && &*c.caller == "<module>"));
    }

    #[test]
    fn hostile_sources_are_skipped_not_fatal() {
        assert!(index_source("def f(:\n", "x.py").is_none());
        let deep = format!("x = {}1{}\n", "(".repeat(5000), ")".repeat(5000));
        assert!(index_source(&deep, "x.py").is_none());
        assert!(!valid_name("a b"));
        assert!(!valid_name(""));
        assert!(!valid_name("a..b"));
        assert!(valid_name("Config.load"));
    }

    #[test]
    fn deep_but_allowed_nesting_is_indexed_on_the_indexer_stack() {
        let d = tempfile::tempdir().unwrap();
        let src = format!(
            "x = {}1{}\ndef target():\n    return f({})\n",
            "[".repeat(190),
            "]".repeat(190),
            "g(".repeat(60) + &")".repeat(60)
        );
        std::fs::write(d.path().join("deep.py"), src).unwrap();
        let ws = Workspace::open(d.path()).unwrap();
        let spec = ToolSpec {
            name: "find_callers".into(),
            provider: "builtin".into(),
            ..ToolSpec::default()
        };
        let Data::List(v) = call(&spec, &[Data::Str("g".into())], &ws).unwrap() else {
            panic!()
        };
        assert_eq!(v.len(), 60);
    }

    #[test]
    fn walks_workspace_safely() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::create_dir_all(p.join("pkg/sub")).unwrap();
        std::fs::create_dir_all(p.join(".hidden")).unwrap();
        std::fs::create_dir_all(p.join("venv/lib")).unwrap();
        std::fs::create_dir_all(p.join("__pycache__")).unwrap();
        std::fs::write(p.join("venv/pyvenv.cfg"), "").unwrap();
        for f in [
            "pkg/a.py",
            "pkg/sub/b.py",
            ".hidden/c.py",
            "venv/lib/d.py",
            "__pycache__/e.py",
            "top.py",
        ] {
            std::fs::write(p.join(f), "def target():\n    pass\n").unwrap();
        }
        std::fs::write(
            p.join("big.py"),
            format!("def target():\n    pass\n#{}\n", "x".repeat(2 << 20)),
        )
        .unwrap();
        std::fs::write(p.join("latin.py"), b"def target():\n    return '\xe9'\n").unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("o.py"), "def target(): pass\n").unwrap();
        std::os::unix::fs::symlink(out.path(), p.join("link")).unwrap();
        std::os::unix::fs::symlink(out.path().join("o.py"), p.join("l.py")).unwrap();
        let ws = Workspace::open(p).unwrap();
        let spec = ToolSpec {
            name: "find_definitions".into(),
            provider: "codeintel".into(),
            ..ToolSpec::default()
        };
        let v = call(&spec, &[Data::Str("target".into())], &ws).unwrap();
        let Data::List(items) = v else { panic!() };
        let files: Vec<String> = items
            .iter()
            .map(|d| match d {
                Data::Dict(kv) => match &kv[0].1 {
                    Data::Str(s) => s.clone(),
                    _ => panic!(),
                },
                _ => panic!(),
            })
            .collect();
        assert_eq!(files, vec!["pkg/a.py", "pkg/sub/b.py", "top.py"]);
        // Cached second time round: same answer.
        assert_eq!(
            call(&spec, &[Data::Str("target".into())], &ws).unwrap(),
            Data::List(items)
        );
        let e = call(&spec, &[Data::Int(1)], &ws).unwrap_err();
        assert_eq!(e.type_name, "BadArgument");
    }

    /// `find_definitions` given a file, a folder or a glob: every
    /// definition in the selected files; paths outside refused, a mistyped
    /// path an error, nothing outside the index ever read.
    #[test]
    fn definitions_of_a_file_folder_or_pattern() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir_all(p.join("src/pkg")).unwrap();
        std::fs::create_dir_all(p.join("tests")).unwrap();
        std::fs::create_dir_all(p.join(".hidden")).unwrap();
        std::fs::write(
            p.join("src/pkg/utils.py"),
            "def a():\n    pass\n\n\ndef b():\n    pass\n",
        )
        .unwrap();
        std::fs::write(
            p.join("src/pkg/models.py"),
            "class C:\n    def m(self):\n        pass\n",
        )
        .unwrap();
        std::fs::write(p.join("tests/test_x.py"), "def test_one():\n    pass\n").unwrap();
        std::fs::write(p.join(".hidden/h.py"), "def secret():\n    pass\n").unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("o.py"), "def outside(): pass\n").unwrap();
        std::os::unix::fs::symlink(out.path(), p.join("src/link")).unwrap();
        let ws = Workspace::open(p).unwrap();
        let spec = ToolSpec {
            name: "find_definitions".into(),
            provider: "codeintel".into(),
            ..ToolSpec::default()
        };
        let names = |arg: &str| -> Vec<String> {
            let v = call(&spec, &[Data::Str(arg.into())], &ws).unwrap();
            let Data::List(items) = v else {
                panic!("{v:?}")
            };
            items
                .iter()
                .map(|d| match d {
                    Data::Dict(kv) => match (&kv[0].1, &kv[3].1) {
                        (Data::Str(f), Data::Str(n)) => format!("{f}:{n}"),
                        _ => panic!("{d:?}"),
                    },
                    _ => panic!("{d:?}"),
                })
                .collect()
        };
        assert_eq!(
            names("src/pkg/utils.py"),
            vec!["src/pkg/utils.py:a", "src/pkg/utils.py:b"]
        );
        // A file name alone matches it anywhere; so does a name pattern.
        assert_eq!(names("utils.py"), names("src/pkg/utils.py"));
        assert_eq!(names("test_*.py"), vec!["tests/test_x.py:test_one"]);
        // A folder: everything beneath it, with or without the slash.
        let pkg = vec![
            "src/pkg/models.py:C",
            "src/pkg/models.py:C.m",
            "src/pkg/utils.py:a",
            "src/pkg/utils.py:b",
        ];
        assert_eq!(names("src/pkg"), pkg);
        assert_eq!(names("src/pkg/"), pkg);
        assert_eq!(names("src/**/*.py"), pkg);
        assert_eq!(names("tests/"), vec!["tests/test_x.py:test_one"]);
        // Hidden and symlinked files are not indexed, so not selectable.
        assert_eq!(names("**/*.py").len(), 5);
        assert!(names("src/link/*.py").is_empty());
        let e = call(&spec, &[Data::Str(".hidden/h.py".into())], &ws).unwrap_err();
        assert_eq!(e.type_name, "FileNotFound", "{e:?}");
        // A path that names nothing indexed is an error with the way out; a
        // pattern that matches nothing is an empty answer.
        let e = call(&spec, &[Data::Str("src/pkg/nope.py".into())], &ws).unwrap_err();
        assert_eq!(e.type_name, "FileNotFound");
        assert!(e.message.contains("find_files"), "{}", e.message);
        assert!(names("nope/*.py").is_empty());
        // Out of the workspace: refused before anything is read.
        for bad in ["../x.py", "/etc/x.py", "src/../../x.py"] {
            let e = call(&spec, &[Data::Str(bad.into())], &ws).unwrap_err();
            assert_eq!(e.type_name, "PathOutsideWorkspace", "{bad}: {e:?}");
        }
        // find_callers keeps taking names only.
        let callers = ToolSpec {
            name: "find_callers".into(),
            provider: "codeintel".into(),
            ..ToolSpec::default()
        };
        let e = call(&callers, &[Data::Str("src/pkg/utils.py".into())], &ws).unwrap_err();
        assert_eq!(e.type_name, "BadArgument");
        // A plain or dotted name is still a name.
        assert_eq!(names("C.m"), vec!["src/pkg/models.py:C.m"]);
    }

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            provider: "builtin".into(),
            ..ToolSpec::default()
        }
    }

    /// A marker unique to this test process and call, so the content cache
    /// (process-wide, by content) never serves a file parsed elsewhere.
    fn unique() -> String {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        format!(
            "# {} {} {:?}\n",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst),
            std::time::SystemTime::now()
        )
    }

    #[test]
    fn long_lines_and_long_names_stay_bounded() {
        // 100k calls on one line: each call's text is the (cut) line, shared.
        let line = format!("x = [{}]\n", "f(),".repeat(100_000));
        let ix = index_source(&line, "x.py").unwrap();
        assert_eq!(ix.calls.len(), 100_000);
        assert!(ix.calls.iter().all(|c| c.text.len() <= MAX_TEXT_BYTES));
        assert!(ix.bytes < MAX_INDEX_BYTES, "{}", ix.bytes);
        // Qualified names repeat a 200 kB class name for each of 100
        // methods: 20 MB of names from a 200 kB file. Skipped, not built.
        let src = format!(
            "class {}:\n{}",
            "C".repeat(200_000),
            "    def m(self): f()\n".repeat(100)
        );
        assert!(index_source(&src, "x.py").is_none());
        // The same shape at a sane size is indexed.
        let src = format!(
            "class {}:\n{}",
            "C".repeat(200),
            "    def m(self): f()\n".repeat(100)
        );
        let ix = index_source(&src, "x.py").unwrap();
        assert_eq!(ix.defs.len(), 101);
        assert_eq!(&*ix.calls[99].caller, format!("{}.m", "C".repeat(200)));
    }

    #[test]
    fn stops_at_the_deadline_and_on_cancel() {
        use std::sync::atomic::AtomicBool;
        use std::time::{Duration, Instant};
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.py"), unique() + "def target(): pass\n").unwrap();
        let ws = Workspace::open(d.path()).unwrap();
        let arg = [Data::Str("target".into())];
        let past = Instant::now() - Duration::from_millis(1);
        let e = call_in(
            &RunContext::new(past, None),
            &spec("find_definitions"),
            &arg,
            &ws,
        )
        .unwrap_err();
        assert_eq!(e.type_name, "Timeout", "{}", e.message);
        let later = Instant::now() + Duration::from_secs(3600);
        let flag = Some(Arc::new(AtomicBool::new(true)));
        let e = call_in(
            &RunContext::new(later, flag),
            &spec("find_callers"),
            &arg,
            &ws,
        )
        .unwrap_err();
        assert_eq!(e.type_name, "Timeout");
        assert!(e.message.contains("cancelled"), "{}", e.message);
        let ok = call_in(
            &RunContext::new(later, None),
            &spec("find_definitions"),
            &arg,
            &ws,
        );
        assert!(matches!(ok, Ok(Data::List(v)) if v.len() == 1));
    }

    #[test]
    fn gives_up_at_the_deadline_while_indexing_large_files() {
        use std::time::{Duration, Instant};
        // Sixteen distinct files of ~1 MiB of definitions: about half a
        // second of parsing each in a debug build, far more than the 100 ms
        // left to the run.
        let d = tempfile::tempdir().unwrap();
        let body = "def f(a, b=1):\n    return g(a)\n".repeat(30_000);
        for i in 0..16 {
            std::fs::write(d.path().join(format!("m{i}.py")), unique() + &body).unwrap();
        }
        let ws = Workspace::open(d.path()).unwrap();
        let t = Instant::now();
        let deadline = t + Duration::from_millis(100);
        let r = call_in(
            &RunContext::new(deadline, None),
            &spec("find_callers"),
            &[Data::Str("g".into())],
            &ws,
        );
        let took = t.elapsed();
        assert_eq!(r.unwrap_err().type_name, "Timeout");
        // Generous: the wait polls every 20 ms; the parse going on in the
        // background does not hold the caller.
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    #[test]
    fn total_bytes_read_is_bounded() {
        // 65 hard links to one 1 MiB file of comments: parsed once (cached),
        // but 65 MiB to read per call.
        let d = tempfile::tempdir().unwrap();
        let text = unique() + &format!("# {}\n", "x".repeat(1021)).repeat(1020);
        assert!(text.len() as u64 <= MAX_FILE_BYTES);
        std::fs::write(d.path().join("f0.py"), &text).unwrap();
        let n = MAX_TOTAL_BYTES / text.len() as u64 + 1;
        for i in 1..n {
            std::fs::hard_link(d.path().join("f0.py"), d.path().join(format!("f{i}.py"))).unwrap();
        }
        let ws = Workspace::open(d.path()).unwrap();
        let e = call(&spec("find_definitions"), &[Data::Str("x".into())], &ws).unwrap_err();
        assert_eq!(e.type_name, "TooLarge");
        assert!(e.message.contains("MAX_TOTAL_BYTES"), "{}", e.message);
        std::fs::remove_file(d.path().join("f0.py")).unwrap();
        let v = call(&spec("find_definitions"), &[Data::Str("x".into())], &ws).unwrap();
        assert_eq!(v, Data::List(vec![]));
    }
}
