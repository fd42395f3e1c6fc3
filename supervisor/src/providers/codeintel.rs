//! Code intelligence over the workspace's Python sources, built on the
//! parser lackpy already has (rustpython-parser):
//!
//! - `find_definitions(name) -> list[dict]`: `{"file", "line", "kind"
//!   ("function" | "class" | "method"), "name" (qualified: `Class.method`,
//!   `outer.inner`), "signature"}` for every `def`/`class` whose simple or
//!   qualified name is `name`;
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
//! do not parse. Results are sorted by (file, line). Each file's index is
//! cached in memory per content hash (keyed SipHash), so a repeated query
//! re-reads but does not re-parse. Parsing runs on a dedicated thread with
//! a large stack.

use super::super::tools::fs::{fail, openat2, Workspace};
use lackpy_policy::config::ToolSpec;
use lackpy_policy::wire::{Data, ToolFailure};
use rustpython_parser::ast::{self, Expr, Ranged, Stmt};
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::ffi::CString;
use std::hash::BuildHasher;
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex, OnceLock};

/// Largest file indexed, in bytes. Why: generated or vendored blobs are not
/// code anyone asks about, and the cap bounds one call's memory.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Most files one call looks at.
pub const MAX_FILES: usize = 100_000;
/// Most directories one call visits.
pub const MAX_DIRS: usize = 100_000;
/// Most results one call returns (beyond: `TooLarge`).
pub const MAX_RESULTS: usize = 20_000;
/// Deepest syntax nesting indexed (checked by the validator's pre-scan
/// before parsing). Why: real code nests far less; deeper files could
/// exhaust the parser's stack.
pub const MAX_NESTING: usize = 200;
/// Stack of the indexing thread. Why: the parser and the walk recurse
/// once per nesting level; [`MAX_NESTING`] levels fit with a wide margin.
const STACK_BYTES: usize = 16 * 1024 * 1024;
/// Cached file indexes kept before the cache is reset.
const CACHE_ENTRIES: usize = 200_000;

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
    caller: String,
    text: String,
}

/// Everything the tools need from one file.
#[derive(Debug, Default)]
struct FileIndex {
    defs: Vec<Def>,
    calls: Vec<CallSite>,
}

struct Cache {
    hasher: RandomState,
    files: HashMap<(u64, usize), Arc<FileIndex>>,
}

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| {
        Mutex::new(Cache {
            hasher: RandomState::new(),
            files: HashMap::new(),
        })
    })
}

/// Run one call of a code-intelligence tool.
///
/// # Errors
/// `BadArgument` for a name that is not a (dotted) identifier, `TooLarge`
/// beyond [`MAX_RESULTS`], `ToolFailed` for I/O failures.
pub fn call(spec: &ToolSpec, args: &[Data], ws: &Workspace) -> Result<Data, ToolFailure> {
    let tool = spec.name.as_str();
    let which = if is_codeintel(tool) {
        tool.to_string()
    } else {
        // An aliased or renamed spec: the provider config names the function.
        spec.provider_config
            .get("function")
            .and_then(|f| f.as_str())
            .unwrap_or(tool)
            .to_string()
    };
    let name = match args.first() {
        Some(Data::Str(s)) => s.clone(),
        Some(other) => {
            return Err(fail(
                "BadArgument",
                format!(
                    "{tool}() argument 'name' must be str, not {}",
                    crate::tools::type_name(other)
                ),
            ))
        }
        None => {
            return Err(fail(
                "BadArgument",
                format!("{tool}() missing required argument: 'name'"),
            ))
        }
    };
    if !valid_name(&name) {
        return Err(fail(
            "BadArgument",
            format!("{tool}() argument 'name' must be a Python name such as 'load' or 'Config.load', not {name:?}"),
        ));
    }
    let root = open_root(ws)?;
    let work = || -> Result<Data, ToolFailure> {
        let indexed = index_tree(&root);
        match which.as_str() {
            "find_definitions" => definitions(&indexed, &name),
            "find_callers" => callers(&indexed, &name),
            other => Err(fail(
                "ToolFailed",
                format!("{tool}: no code-intelligence function {other:?}"),
            )),
        }
    };
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("codeintel".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, work)
            .map_err(|e| {
                fail(
                    "ToolFailed",
                    format!("{tool}: cannot start the indexer: {e}"),
                )
            })?
            .join()
            .unwrap_or_else(|_| Err(fail("ToolFailed", format!("{tool}: the indexer failed"))))
    })
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

fn too_many(tool: &str) -> ToolFailure {
    fail(
        "TooLarge",
        format!("{tool}() found more than {MAX_RESULTS} results; ask for a more specific name"),
    )
}

fn definitions(files: &[(String, Arc<FileIndex>)], name: &str) -> Result<Data, ToolFailure> {
    let mut out = Vec::new();
    for (file, idx) in files {
        for d in &idx.defs {
            if d.name == name || d.qualname == name {
                if out.len() >= MAX_RESULTS {
                    return Err(too_many("find_definitions"));
                }
                out.push(dict(vec![
                    ("file", Data::Str(file.clone())),
                    ("line", Data::Int(i64::from(d.line))),
                    ("kind", Data::Str(d.kind.to_string())),
                    ("name", Data::Str(d.qualname.clone())),
                    ("signature", Data::Str(d.signature.clone())),
                ]));
            }
        }
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

fn callers(files: &[(String, Arc<FileIndex>)], name: &str) -> Result<Data, ToolFailure> {
    let mut out = Vec::new();
    for (file, idx) in files {
        for c in &idx.calls {
            if callee_matches(&c.callee, name) {
                if out.len() >= MAX_RESULTS {
                    return Err(too_many("find_callers"));
                }
                out.push(dict(vec![
                    ("file", Data::Str(file.clone())),
                    ("line", Data::Int(i64::from(c.line))),
                    ("caller", Data::Str(c.caller.clone())),
                    ("text", Data::Str(c.text.clone())),
                ]));
            }
        }
    }
    Ok(Data::List(out))
}

// ---------------------------------------------------------------------------
// Finding and reading the files.

fn cstr(s: &str) -> Result<CString, ToolFailure> {
    CString::new(s).map_err(|_| fail("ToolFailed", "path with a NUL byte"))
}

fn list_dir(fd: &OwnedFd) -> Vec<(String, std::fs::FileType)> {
    // The descriptor was opened beneath the workspace without following
    // symlinks; listing it through /proc names exactly that directory.
    let Ok(rd) = std::fs::read_dir(format!("/proc/self/fd/{}", fd.as_raw_fd())) else {
        return Vec::new();
    };
    let mut v: Vec<(String, std::fs::FileType)> = rd
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let ft = e.file_type().ok()?;
            Some((name, ft))
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

const SKIP_DIRS: &[&str] = &["__pycache__", "node_modules", "site-packages"];

/// The workspace root as a readable directory descriptor.
fn open_root(ws: &Workspace) -> Result<OwnedFd, ToolFailure> {
    openat2(ws.fd(), &cstr(".")?, libc::O_RDONLY | libc::O_DIRECTORY, 0).map_err(|e| {
        fail(
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
fn index_tree(root: &OwnedFd) -> Vec<(String, Arc<FileIndex>)> {
    let mut out = Vec::new();
    let mut stack: Vec<String> = vec![String::new()];
    let mut dirs = 0usize;
    let mut files = 0usize;
    while let Some(rel) = stack.pop() {
        dirs += 1;
        if dirs > MAX_DIRS || files >= MAX_FILES {
            break;
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
        let entries = list_dir(&fd);
        if !rel.is_empty() && entries.iter().any(|(n, _)| n == "pyvenv.cfg") {
            continue; // a virtual environment
        }
        let mut subdirs = Vec::new();
        for (name, ft) in entries {
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
            } else if ft.is_file() && name.ends_with(".py") && files < MAX_FILES {
                let Ok(c) = cstr(&name) else { continue };
                let Ok(f) = openat2(
                    fd.as_raw_fd(),
                    &c,
                    libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
                    0,
                ) else {
                    continue;
                };
                files += 1;
                if let Some(src) = read_file(f) {
                    out.push((path.clone(), index_cached(&src, &path)));
                }
            }
        }
        // Depth-first, names in order (the final sort makes order exact).
        stack.extend(subdirs.into_iter().rev());
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
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
/// before.
fn index_cached(src: &str, path: &str) -> Arc<FileIndex> {
    let key = {
        let c = match cache().lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let k = (c.hasher.hash_one(src.as_bytes()), src.len());
        if let Some(idx) = c.files.get(&k) {
            return idx.clone();
        }
        k
    };
    let idx = Arc::new(index_source(src, path).unwrap_or_default());
    let mut c = match cache().lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    if c.files.len() >= CACHE_ENTRIES {
        c.files.clear();
    }
    c.files.insert(key, idx.clone());
    idx
}

// ---------------------------------------------------------------------------
// Indexing one file.

/// Index one source text; `None` when it nests too deeply or does not parse.
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
        out: FileIndex::default(),
    };
    ix.stmts(&body);
    Some(ix.out)
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
    out: FileIndex,
}

impl Indexer<'_> {
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

    fn caller(&self) -> String {
        if self.scope.is_empty() {
            "<module>".to_string()
        } else {
            self.scope
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(".")
        }
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
        let def = Def {
            line: self.def_line(range, decorators),
            kind,
            name: name.to_string(),
            qualname: self.qual(name),
            signature: self.signature(name, args, returns, is_async),
        };
        self.out.defs.push(def);
        self.scope.push((name.to_string(), ScopeKind::Function));
        self.stmts(body);
        self.scope.pop();
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
                let mut bases: Vec<String> = c.bases.iter().map(|b| self.flat(b.range())).collect();
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
                self.out.defs.push(def);
                self.scope.push((c.name.to_string(), ScopeKind::Class));
                self.stmts(&c.body);
                self.scope.pop();
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
            Stmt::Try(x) => {
                self.stmts(&x.body);
                for h in &x.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    if let Some(t) = &h.type_ {
                        self.expr(t);
                    }
                    self.stmts(&h.body);
                }
                self.stmts(&x.orelse);
                self.stmts(&x.finalbody);
            }
            Stmt::TryStar(x) => {
                self.stmts(&x.body);
                for h in &x.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    if let Some(t) = &h.type_ {
                        self.expr(t);
                    }
                    self.stmts(&h.body);
                }
                self.stmts(&x.orelse);
                self.stmts(&x.finalbody);
            }
            Stmt::Assert(x) => {
                self.expr(&x.test);
                if let Some(m) = &x.msg {
                    self.expr(m);
                }
            }
            Stmt::Expr(x) => self.expr(&x.value),
            Stmt::Import(_)
            | Stmt::ImportFrom(_)
            | Stmt::Global(_)
            | Stmt::Nonlocal(_)
            | Stmt::Pass(_)
            | Stmt::Break(_)
            | Stmt::Continue(_) => {}
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
        let le = self.src[ls..].find('\n').map_or(self.src.len(), |n| ls + n);
        let text = self.src.get(ls..le).unwrap_or("").trim().to_string();
        let site = CallSite {
            line,
            callee,
            caller: self.caller(),
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
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
            .map(|c| (c.line, c.caller.as_str(), c.text.as_str()))
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
            .any(|c| c.callee == "os.path.join" && c.caller == "load"));
        assert!(ix
            .calls
            .iter()
            .any(|c| c.callee == "make_default" && c.caller == "Config"));
        assert!(ix
            .calls
            .iter()
            .any(|c| c.callee == "decorator" && c.caller == "<module>"));
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
}
