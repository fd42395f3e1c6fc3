//! `find_files(pattern)`: CPython 3.11's `pathlib.Path(".").glob(pattern)`
//! over the workspace, walked with descriptors resolved beneath it.
//!
//! Semantics kept from CPython 3.11: components split on `/` with empty and
//! `.` components dropped; `*`, `?`, `[seq]`, `[!seq]` per `fnmatch`
//! (case-sensitive, hidden names included); `**` as a whole component
//! matches the directory itself and every directory below it, never
//! following symlinks; a wildcard component that is not last only matches
//! directories (following symlinks — here, only symlinks that stay inside);
//! a pattern ending in `**` or in `/` yields directories only; the root
//! prints as `.`. Results are sorted by plain string order. Differences, on purpose:
//! `..` components and absolute patterns are refused (CPython would climb
//! out), a symlink pointing outside the workspace is never followed, and
//! the control directory `.lackpy/` is neither listed nor matched (by name
//! at the root, and by the kernel's name of every directory opened, so a
//! symlink to it shows nothing either).
//!
//! Every size a pattern chooses is bounded ([`MAX_PATTERN_BYTES`],
//! [`MAX_COMPONENTS`], [`MAX_RECURSIVE`], [`MAX_CLASS_ITEMS`]: beyond one,
//! `BadArgument` naming it), parsing is linear, the walk is a work list
//! (no recursion a pattern can deepen; each directory is listed at most
//! once per component), and the run's deadline and cancel flag are polled
//! while it works.

use super::fs::{fd_id, in_control_dir, openat2, root_path, Workspace, CONTROL_DIR};
use crate::call::{Interrupt, RunContext};
use lackpy_policy::wire::ToolFailure;
use std::collections::{HashMap, HashSet};
use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, OwnedFd};

/// Most paths one call returns.
/// Why: the result must fit in one IPC frame and a program's memory; 100k
/// short paths are a few MiB.
pub const MAX_RESULTS: usize = 100_000;
/// Most directory listings one call makes.
/// Why: bounds the work on huge trees and through symlink loops; with
/// [`MAX_RECURSIVE`] `**` components every directory is listed at most once
/// per component, and real patterns list far fewer.
pub const MAX_VISITS: usize = 200_000;
/// Longest pattern, in bytes.
/// Why: Linux's PATH_MAX; no real pattern is longer, and every other cost
/// of parsing and matching is bounded by it.
pub const MAX_PATTERN_BYTES: usize = 4096;
/// Most path components in a pattern (after dropping empty and `.` ones).
/// Why: real patterns have a handful; each component is one step of the
/// walk, and the number of walk states is components times directories.
pub const MAX_COMPONENTS: usize = 256;
/// Most `**` components in a pattern.
/// Why: each `**` may list every directory of the workspace once; real
/// patterns have one or two.
pub const MAX_RECURSIVE: usize = 32;
/// Most characters and ranges in one `[...]` class.
/// Why: a class is tested for each character of each name; real classes
/// have a few items (`[a-zA-Z0-9_]` has four).
pub const MAX_CLASS_ITEMS: usize = 256;
/// Most walk states (a directory paired with the pattern component still
/// to match there) one call goes through.
/// Why: bounds the bookkeeping of one call; [`MAX_VISITS`] listings of
/// directories do not need more.
pub const MAX_STATES: usize = 1_000_000;
/// Most bytes of paths one call holds (directories being walked and
/// results).
/// Why: a call must not grow the supervisor without bound on a tree of
/// long paths; the result must fit in one 16 MiB IPC frame anyway.
pub const MAX_WALK_BYTES: usize = 32 * 1024 * 1024;

/// Most entries of one directory a listing reads (`find_files`, and code
/// intelligence's walk).
/// Why: a listing is held whole while it is matched (sorted, for code
/// intelligence), and a writable tool makes a directory of 1,000,000
/// empty files in a minute (~90 MiB per listing); twice [`MAX_RESULTS`]
/// leaves every directory a call could return whole.
pub const MAX_DIR_ENTRIES: usize = 2 * MAX_RESULTS;

/// The error for a directory of more than [`MAX_DIR_ENTRIES`] entries.
pub(crate) fn too_many_entries(rel: &str) -> ToolFailure {
    let dir = if rel.is_empty() { "." } else { rel };
    ToolFailure::new(
        "TooLarge",
        format!("directory {dir:?} has more than {MAX_DIR_ENTRIES} entries (MAX_DIR_ENTRIES)"),
    )
}

/// `BadArgument` when a pattern has more than `bound` of `what` (`name`
/// is the bound's constant, quoted in the message).
fn at_most(what: &str, size: usize, bound: usize, name: &str) -> Result<(), ToolFailure> {
    if size <= bound {
        return Ok(());
    }
    Err(ToolFailure::new(
        "BadArgument",
        format!("find_files() pattern has {size} {what}; at most {bound} are allowed ({name})"),
    ))
}

/// One parsed component of a pattern.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Precise(String),
    Wild(Matcher),
    Recursive,
}

impl Part {
    /// Whether this component matches the single path component `name`
    /// (`**` matches any name).
    fn matches(&self, name: &str) -> bool {
        match self {
            Part::Precise(p) => p == name,
            Part::Wild(m) => m.matches(name),
            Part::Recursive => true,
        }
    }
}

/// The characters that make a pattern component a wildcard; a component
/// without any of them is matched literally.
pub(crate) const GLOB_CHARS: [char; 3] = ['*', '?', '['];

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Char(char),
    Any,
    AnySeq,
    Class(Class),
}

/// A `[...]` set: an ASCII bitmap, and the items for other characters.
#[derive(Debug, Clone, PartialEq)]
struct Class {
    negate: bool,
    ascii: [u64; 2],
    /// Items that reach beyond ASCII (tested only for non-ASCII characters).
    wide: Vec<(char, char)>,
}

impl Class {
    fn new(negate: bool, items: &[(char, char)]) -> Class {
        let mut ascii = [0u64; 2];
        let mut wide = Vec::new();
        for &(lo, hi) in items {
            if lo > hi {
                continue; // an empty range matches nothing (fnmatch drops it)
            }
            let (l, h) = (u32::from(lo), u32::from(hi).min(127));
            let mut c = l;
            while c <= h {
                ascii[(c / 64) as usize] |= 1 << (c % 64);
                c += 1;
            }
            if u32::from(hi) > 127 {
                wide.push((lo, hi));
            }
        }
        Class {
            negate,
            ascii,
            wide,
        }
    }

    fn hit(&self, c: char) -> bool {
        let n = u32::from(c);
        let inside = if n < 128 {
            self.ascii[(n / 64) as usize] & (1 << (n % 64)) != 0
        } else {
            self.wide.iter().any(|&(lo, hi)| lo <= c && c <= hi)
        };
        inside != self.negate
    }
}

/// The `fnmatch` matcher of one wildcard component.
#[derive(Debug, Clone, PartialEq)]
struct Matcher {
    toks: Vec<Tok>,
    /// Characters a name needs at least (every token but `*` takes one).
    min_chars: usize,
    has_star: bool,
}

/// The position of the next `]` at or after each index (`len` when none):
/// one backwards pass, so finding each class's end is O(1) and parsing a
/// component is linear in its length whatever its brackets.
fn next_close(chars: &[char]) -> Vec<usize> {
    let mut out = vec![chars.len(); chars.len() + 1];
    for i in (0..chars.len()).rev() {
        out[i] = if chars[i] == ']' { i } else { out[i + 1] };
    }
    out
}

fn parse_component(c: &str) -> Result<Part, ToolFailure> {
    if c == "**" {
        return Ok(Part::Recursive);
    }
    if c.contains("**") {
        return Err(ToolFailure::new(
            "BadArgument",
            "Invalid pattern: '**' can only be an entire path component",
        ));
    }
    if !c.contains(GLOB_CHARS) {
        return Ok(Part::Precise(c.to_string()));
    }
    let chars: Vec<char> = c.chars().collect();
    let close = next_close(&chars);
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => toks.push(Tok::AnySeq),
            '?' => toks.push(Tok::Any),
            '[' => {
                // fnmatch.translate: the closing ']' (a ']' right after '[' or '[!' is literal).
                let mut j = i + 1;
                if j < chars.len() && chars[j] == '!' {
                    j += 1;
                }
                if j < chars.len() && chars[j] == ']' {
                    j += 1;
                }
                let j = close[j.min(chars.len())];
                if j >= chars.len() {
                    toks.push(Tok::Char('['));
                } else {
                    let mut body = &chars[i + 1..j];
                    let negate = body.first() == Some(&'!');
                    if negate {
                        body = &body[1..];
                    }
                    let mut items = Vec::new();
                    let mut k = 0;
                    while k < body.len() {
                        if k + 2 < body.len() && body[k + 1] == '-' {
                            items.push((body[k], body[k + 2]));
                            k += 3;
                        } else {
                            items.push((body[k], body[k]));
                            k += 1;
                        }
                    }
                    at_most(
                        "items in one [...] class",
                        items.len(),
                        MAX_CLASS_ITEMS,
                        "MAX_CLASS_ITEMS",
                    )?;
                    toks.push(Tok::Class(Class::new(negate, &items)));
                    i = j;
                }
            }
            ch => toks.push(Tok::Char(ch)),
        }
        i += 1;
    }
    let min_chars = toks.iter().filter(|t| **t != Tok::AnySeq).count();
    let has_star = toks.len() != min_chars;
    Ok(Part::Wild(Matcher {
        toks,
        min_chars,
        has_star,
    }))
}

impl Matcher {
    /// Does `name` match? Iterative backtracking over the last `*` only:
    /// O(name × tokens) steps, no recursion.
    fn matches(&self, name: &str) -> bool {
        let n = name.chars().count();
        if n < self.min_chars || (!self.has_star && n != self.min_chars) {
            return false;
        }
        let s: Vec<char> = name.chars().collect();
        let toks = &self.toks;
        let (mut t, mut i) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while i < s.len() {
            let step = match toks.get(t) {
                Some(Tok::AnySeq) => {
                    star = Some((t, i));
                    t += 1;
                    continue;
                }
                Some(Tok::Any) => true,
                Some(Tok::Char(c)) => *c == s[i],
                Some(Tok::Class(class)) => class.hit(s[i]),
                None => false,
            };
            if step {
                t += 1;
                i += 1;
            } else if let Some((st, si)) = star {
                t = st + 1;
                i = si + 1;
                star = Some((st, si + 1));
            } else {
                return false;
            }
        }
        toks[t..].iter().all(|x| *x == Tok::AnySeq)
    }

    /// Work units of one match, for the deadline countdown (one unit is
    /// about a thousand steps).
    fn cost(&self, name: &str) -> u32 {
        let steps = name.len().saturating_mul(self.toks.len());
        u32::try_from(steps / 1024).unwrap_or(u32::MAX).max(1)
    }
}

/// A parsed `find_files` pattern (see the module documentation for the
/// syntax and [`parse_pattern`] for the bounds).
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    parts: Vec<Part>,
    /// The pattern ends in `/`: its last component matches directories
    /// only (CPython 3.11).
    dirs_only: bool,
}

impl Pattern {
    /// Number of components (empty and `.` components dropped).
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Never true: a pattern without components is refused by [`parse_pattern`].
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// Whether component `index` matches the single path component `name`
    /// (`**` matches any name); `None` past the last component.
    pub fn matches_component(&self, index: usize, name: &str) -> Option<bool> {
        Some(self.parts.get(index)?.matches(name))
    }

    /// Whether the pattern selects the file at the relative path `path`
    /// (components split on `/`): it matches the whole path (unless the
    /// pattern ends in `/`, which selects folders), or one of the folders
    /// holding the file (`src/pkg` selects `src/pkg/a.py`). Matched against
    /// the path text alone — nothing is opened. A set of reachable
    /// positions per pattern component: O(components × path components)
    /// steps, no backtracking a pattern could blow up.
    pub fn selects_file(&self, path: &str) -> bool {
        let comps: Vec<&str> = path
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .collect();
        let n = comps.len();
        if n == 0 {
            return false;
        }
        // reach[j]: the components matched so far can end after comps[..j].
        let mut reach = vec![false; n + 1];
        reach[0] = true;
        for part in &self.parts {
            let mut next = vec![false; n + 1];
            if matches!(part, Part::Recursive) {
                // Zero or more components: every position from the first reached.
                if let Some(first) = reach.iter().position(|r| *r) {
                    next[first..].iter_mut().for_each(|x| *x = true);
                }
            } else {
                for j in (0..n).filter(|&j| reach[j]) {
                    next[j + 1] = part.matches(comps[j]);
                }
            }
            reach = next;
        }
        (reach[n] && !self.dirs_only) || reach[1..n].iter().any(|r| *r)
    }
}

/// Parse a pattern into components, in time linear in its length.
///
/// # Errors
/// `BadArgument` for a NUL byte, an empty pattern, `**` inside a component,
/// or a pattern beyond one of the bounds ([`MAX_PATTERN_BYTES`],
/// [`MAX_COMPONENTS`], [`MAX_RECURSIVE`], [`MAX_CLASS_ITEMS`]; the message
/// names the bound and the size); `PathOutsideWorkspace` for absolute
/// patterns and `..` components.
pub fn parse_pattern(pattern: &str) -> Result<Pattern, ToolFailure> {
    let n = pattern.len();
    if n > MAX_PATTERN_BYTES {
        let why = format!("find_files() pattern is {n} bytes long; at most {MAX_PATTERN_BYTES} are allowed (MAX_PATTERN_BYTES)");
        return Err(ToolFailure::new("BadArgument", why));
    }
    if pattern.contains('\0') {
        return Err(ToolFailure::new(
            "BadArgument",
            "pattern contains a NUL byte",
        ));
    }
    if pattern.starts_with('/') {
        return Err(ToolFailure::new(
            "PathOutsideWorkspace",
            "Non-relative patterns are unsupported",
        ));
    }
    let comps: Vec<&str> = pattern
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    at_most("components", comps.len(), MAX_COMPONENTS, "MAX_COMPONENTS")?;
    let recursive = comps.iter().filter(|c| **c == "**").count();
    at_most("'**' components", recursive, MAX_RECURSIVE, "MAX_RECURSIVE")?;
    let mut parts: Vec<Part> = Vec::with_capacity(comps.len());
    for c in comps {
        if c == ".." {
            return Err(ToolFailure::new(
                "PathOutsideWorkspace",
                format!("pattern {pattern:?} climbs out of the workspace"),
            ));
        }
        let part = parse_component(c)?;
        // `**/**` selects exactly what `**` does: keep one.
        if part == Part::Recursive && parts.last() == Some(&Part::Recursive) {
            continue;
        }
        parts.push(part);
    }
    if parts.is_empty() {
        return Err(ToolFailure::new(
            "BadArgument",
            format!("Unacceptable pattern: {pattern:?}"),
        ));
    }
    Ok(Pattern {
        parts,
        dirs_only: pattern.ends_with('/'),
    })
}

fn join(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_string()
    } else {
        format!("{rel}/{name}")
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Dir,
    SymlinkToDir,
    Other,
}

/// One call's walk: an explicit work list of states (a directory, the
/// index of the component to match in it), each state done once, so the
/// work is at most components × directories listings whatever the
/// pattern, and no recursion a pattern could deepen.
struct Walk<'a> {
    ws: &'a Workspace,
    out: Vec<String>,
    visits: usize,
    /// Directories reached so far, by id.
    dirs: Vec<String>,
    dir_ids: HashMap<String, u32>,
    seen: HashSet<(u32, u32)>,
    todo: Vec<(u32, u32)>,
    bytes: usize,
    clock: Interrupt,
    /// The kernel's name of the workspace root: what lies in its control
    /// directory `.lackpy/` is never listed or matched (as for `read_file`).
    root: Option<std::path::PathBuf>,
}

/// Whether the open directories `a` and `b` are the same one (device and
/// inode); `false` when either cannot be inspected.
fn same_dir(a: std::os::fd::RawFd, b: std::os::fd::RawFd) -> bool {
    matches!((fd_id(a), fd_id(b)), (Some(x), Some(y)) if x == y)
}

impl<'w> Walk<'w> {
    /// A walk of `ws` for run `run`, nothing found yet.
    fn new(ws: &'w Workspace, run: &RunContext) -> Self {
        Walk {
            ws,
            out: Vec::new(),
            visits: 0,
            dirs: Vec::new(),
            dir_ids: HashMap::new(),
            seen: HashSet::new(),
            todo: Vec::new(),
            bytes: 0,
            clock: Interrupt::new(run),
            root: root_path(ws),
        }
    }

    /// Whether `fd` (opened beneath the workspace) lies in `.lackpy/`.
    fn in_control(&self, fd: &OwnedFd) -> bool {
        in_control_dir(self.root.as_deref(), fd.as_raw_fd())
    }

    fn open_dir(&mut self, rel: &str) -> Option<OwnedFd> {
        let c = CString::new(if rel.is_empty() { "." } else { rel }).ok()?;
        let fd = openat2(self.ws.fd(), &c, libc::O_RDONLY | libc::O_DIRECTORY, 0).ok()?;
        (!self.in_control(&fd)).then_some(fd)
    }

    fn exists(&self, rel: &str, dir_only: bool) -> bool {
        let Ok(c) = CString::new(rel) else {
            return false;
        };
        let flags = if dir_only {
            libc::O_PATH | libc::O_DIRECTORY
        } else {
            libc::O_PATH
        };
        openat2(self.ws.fd(), &c, flags, 0).is_ok_and(|fd| !self.in_control(&fd))
    }

    fn account(&mut self, bytes: usize) -> Result<(), ToolFailure> {
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes > MAX_WALK_BYTES {
            return Err(ToolFailure::new(
                "TooLarge",
                format!(
                    "pattern walks or matches more than {MAX_WALK_BYTES} bytes of paths (MAX_WALK_BYTES)"
                ),
            ));
        }
        Ok(())
    }

    /// Directory entries of `rel` with their kind (symlinks classified by
    /// whether they resolve to a directory *inside* the workspace).
    fn list(&mut self, rel: &str) -> Result<Vec<(String, Kind)>, ToolFailure> {
        self.visits += 1;
        if self.visits > MAX_VISITS {
            return Err(ToolFailure::new(
                "TooLarge",
                format!("pattern visits more than {MAX_VISITS} directories (MAX_VISITS)"),
            ));
        }
        let Some(fd) = self.open_dir(rel) else {
            return Ok(Vec::new());
        };
        // The root's `.lackpy` is hidden however the root was reached: by
        // `rel` empty, or through a symlink to it (`self -> .`, whose
        // `self/*` listed `self/.lackpy`). Compared by inode.
        let at_root = rel.is_empty() || same_dir(fd.as_raw_fd(), self.ws.fd());
        // SAFETY: fdopendir takes ownership of a valid directory descriptor.
        let dir = unsafe { libc::fdopendir(fd.as_raw_fd()) };
        if dir.is_null() {
            return Ok(Vec::new());
        }
        std::mem::forget(fd); // now owned by `dir`
        let entries = self.read_entries(rel, dir, at_root);
        // SAFETY: closing the DIR* we opened (also closes the descriptor).
        unsafe { libc::closedir(dir) };
        entries
    }

    fn read_entries(
        &mut self,
        rel: &str,
        dir: *mut libc::DIR,
        at_root: bool,
    ) -> Result<Vec<(String, Kind)>, ToolFailure> {
        let mut entries = Vec::new();
        // Every entry read counts, `.` and `..` (hence the + 2) and names
        // skipped included.
        let mut read = 0usize;
        loop {
            self.clock.tick()?;
            // SAFETY: `dir` is a valid DIR* until the caller's closedir.
            let ent = unsafe { libc::readdir(dir) };
            if ent.is_null() {
                break;
            }
            read += 1;
            if read > MAX_DIR_ENTRIES + 2 {
                return Err(too_many_entries(rel));
            }
            // SAFETY: readdir returned a valid dirent whose d_name is NUL-terminated.
            let (name, dtype) = unsafe { (CStr::from_ptr((*ent).d_name.as_ptr()), (*ent).d_type) };
            let Ok(name) = name.to_str() else { continue }; // non-UTF-8 names cannot reach a program
            if name == "." || name == ".." || (at_root && name == CONTROL_DIR) {
                continue;
            }
            let kind = match dtype {
                libc::DT_DIR => Kind::Dir,
                libc::DT_LNK => {
                    if self.exists(&join(rel, name), true) {
                        Kind::SymlinkToDir
                    } else {
                        Kind::Other
                    }
                }
                libc::DT_UNKNOWN => {
                    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
                    let Ok(cn) = CString::new(name) else { continue };
                    // SAFETY: fstatat on the open directory, no symlink following.
                    let rc = unsafe {
                        libc::fstatat(
                            libc::dirfd(dir),
                            cn.as_ptr(),
                            st.as_mut_ptr(),
                            libc::AT_SYMLINK_NOFOLLOW,
                        )
                    };
                    let is_dir = rc == 0 && {
                        // SAFETY: fstatat succeeded, so `st` is initialised.
                        let st = unsafe { st.assume_init() };
                        st.st_mode & libc::S_IFMT == libc::S_IFDIR
                    };
                    if is_dir {
                        Kind::Dir
                    } else if self.exists(&join(rel, name), true) {
                        Kind::SymlinkToDir
                    } else {
                        Kind::Other
                    }
                }
                _ => Kind::Other,
            };
            entries.push((name.to_string(), kind));
        }
        Ok(entries)
    }

    fn push(&mut self, rel: String) -> Result<(), ToolFailure> {
        if self.out.len() >= MAX_RESULTS {
            return Err(ToolFailure::new(
                "TooLarge",
                format!("pattern matches more than {MAX_RESULTS} paths (MAX_RESULTS)"),
            ));
        }
        self.account(rel.len())?;
        self.out
            .push(if rel.is_empty() { ".".to_string() } else { rel });
        Ok(())
    }

    /// Queue state (`rel`, `index`) unless it was queued before.
    fn queue(&mut self, rel: String, index: usize) -> Result<(), ToolFailure> {
        let id = match self.dir_ids.get(&rel) {
            Some(id) => *id,
            None => {
                self.account(rel.len().saturating_mul(2))?;
                let id = u32::try_from(self.dirs.len()).map_err(|_| {
                    ToolFailure::new("TooLarge", "pattern reaches too many directories")
                })?;
                self.dirs.push(rel.clone());
                self.dir_ids.insert(rel, id);
                id
            }
        };
        let index = u32::try_from(index).unwrap_or(u32::MAX);
        if self.seen.insert((id, index)) {
            if self.seen.len() > MAX_STATES {
                return Err(ToolFailure::new(
                    "TooLarge",
                    format!("pattern needs more than {MAX_STATES} walk steps (MAX_STATES)"),
                ));
            }
            self.todo.push((id, index));
        }
        Ok(())
    }

    /// Select the pattern's components from the workspace root, CPython
    /// 3.11's selectors turned into a work list: a state (`d`, `i`) means
    /// "directory `d` exists; match components `i..` beneath it".
    fn run(&mut self, parts: &[Part], dirs_only: bool) -> Result<(), ToolFailure> {
        self.queue(String::new(), 0)?;
        while let Some((id, index)) = self.todo.pop() {
            self.clock.tick()?;
            let rel = self.dirs.get(id as usize).cloned().unwrap_or_default();
            let index = index as usize;
            let Some(part) = parts.get(index) else {
                continue;
            };
            let last = index + 1 == parts.len();
            // What this component matches must be a directory.
            let want_dir = !last || dirs_only;
            match part {
                Part::Precise(name) => {
                    let child = join(&rel, name);
                    if self.exists(&child, want_dir) {
                        if last {
                            self.push(child)?;
                        } else {
                            self.queue(child, index + 1)?;
                        }
                    }
                }
                Part::Wild(m) => {
                    for (name, kind) in self.list(&rel)? {
                        if want_dir && kind == Kind::Other {
                            continue;
                        }
                        self.clock.spend(m.cost(&name))?;
                        if m.matches(&name) {
                            let child = join(&rel, &name);
                            if last {
                                self.push(child)?;
                            } else {
                                self.queue(child, index + 1)?;
                            }
                        }
                    }
                }
                Part::Recursive => {
                    // This directory, then every directory below it, never
                    // through symlinks (CPython 3.11).
                    if last {
                        self.push(rel.clone())?;
                    } else {
                        self.queue(rel.clone(), index + 1)?;
                    }
                    for (name, kind) in self.list(&rel)? {
                        if kind == Kind::Dir {
                            self.queue(join(&rel, &name), index)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Run `pattern` against the workspace; sorted, deduplicated matches.
///
/// Every size a pattern chooses is bounded (see [`parse_pattern`] and the
/// `MAX_*` constants), the walk is iterative, and the run's deadline and
/// cancel flag are polled while it works.
///
/// # Errors
/// `BadArgument` for a malformed or oversized pattern, `PathOutsideWorkspace`
/// for `..` or absolute patterns, `TooLarge` past [`MAX_RESULTS`],
/// [`MAX_VISITS`], [`MAX_STATES`], [`MAX_WALK_BYTES`] or
/// [`MAX_DIR_ENTRIES`], `Timeout` when the run's wall-clock limit passes or
/// the run is cancelled.
pub fn find_files(
    ws: &Workspace,
    pattern: &str,
    run: &RunContext,
) -> Result<Vec<String>, ToolFailure> {
    let pattern = parse_pattern(pattern)?;
    let mut w = Walk::new(ws, run);
    w.run(&pattern.parts, pattern.dirs_only)?;
    let mut out = w.out;
    out.sort();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn tree() -> (tempfile::TempDir, Workspace) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        fs::create_dir_all(p.join("src/sub")).unwrap();
        fs::create_dir_all(p.join(".hidden")).unwrap();
        for f in [
            "a.txt",
            "b.py",
            ".env",
            "src/m.py",
            "src/sub/n.py",
            "src/sub/t.txt",
            ".hidden/h.py",
        ] {
            fs::write(p.join(f), "x").unwrap();
        }
        std::os::unix::fs::symlink("/etc", p.join("etc_link")).unwrap();
        std::os::unix::fs::symlink("src", p.join("src_link")).unwrap();
        let w = Workspace::open(p).unwrap();
        (d, w)
    }

    fn ff(w: &Workspace, pat: &str) -> Vec<String> {
        find_files(w, pat, &RunContext::default()).unwrap()
    }

    // Expected values checked against CPython 3.11: sorted(map(str, Path('.').glob(pat))).
    #[test]
    fn like_pathlib() {
        let (_d, w) = tree();
        assert_eq!(ff(&w, "*.py"), ["b.py"]);
        assert_eq!(
            ff(&w, "*"),
            [".env", ".hidden", "a.txt", "b.py", "etc_link", "src", "src_link"]
        );
        assert_eq!(
            ff(&w, "**/*.py"),
            [".hidden/h.py", "b.py", "src/m.py", "src/sub/n.py"]
        );
        assert_eq!(ff(&w, "**"), [".", ".hidden", "src", "src/sub"]);
        assert_eq!(ff(&w, "src/*"), ["src/m.py", "src/sub"]);
        assert_eq!(ff(&w, "src_link/*.py"), ["src_link/m.py"]);
        assert_eq!(
            ff(&w, "*/*.py"),
            [".hidden/h.py", "src/m.py", "src_link/m.py"]
        );
        assert_eq!(ff(&w, "[ab].*"), ["a.txt", "b.py"]);
        assert_eq!(ff(&w, "[!a]*.py"), ["b.py"]);
        assert_eq!(ff(&w, "?.txt"), ["a.txt"]);
        assert_eq!(ff(&w, "./src//m.py"), ["src/m.py"]);
        assert_eq!(ff(&w, "nope/*"), Vec::<String>::new());
        assert_eq!(ff(&w, "a.txt/*"), Vec::<String>::new());
        assert_eq!(ff(&w, "src/**/*.txt"), ["src/sub/t.txt"]);
        // A trailing '/' keeps directories only (3.11).
        assert_eq!(ff(&w, "*/"), [".hidden", "src", "src_link"]);
        assert_eq!(ff(&w, "src/"), ["src"]);
        assert_eq!(ff(&w, "src//"), ["src"]);
        assert_eq!(ff(&w, "a.txt/"), Vec::<String>::new());
        assert_eq!(ff(&w, "**/"), [".", ".hidden", "src", "src/sub"]);
        assert_eq!(ff(&w, "**/*/"), [".hidden", "src", "src/sub", "src_link"]);
    }

    #[test]
    fn never_leaves_the_workspace() {
        let (_d, w) = tree();
        assert_eq!(ff(&w, "etc_link/*"), Vec::<String>::new());
        assert_eq!(ff(&w, "etc_link/passwd"), Vec::<String>::new());
        for (pattern, refusal) in [
            ("../*", "PathOutsideWorkspace"),
            ("/etc/*", "PathOutsideWorkspace"),
            ("", "BadArgument"),
            ("a**", "BadArgument"),
        ] {
            let e = find_files(&w, pattern, &RunContext::default()).unwrap_err();
            assert_eq!(e.type_name, refusal, "{pattern:?}");
        }
    }

    fn wild(s: &str) -> Matcher {
        match parse_component(s).unwrap() {
            Part::Wild(m) => m,
            _ => panic!("not wild"),
        }
    }

    #[test]
    fn matcher() {
        let p = wild;
        assert!(p("*a*b*c*").matches("xxaxxbxxcxx"));
        assert!(!p("*a*b*c*d").matches("xxaxxbxxcxx"));
        assert!(p("[]]x").matches("]x"));
        assert!(p("[a-c]*").matches("b"));
        assert!(p("[*").matches("[*x") || !p("[*").matches("["));
        // Many stars against a long name stays fast (no exponential backtracking).
        assert!(p(&"*a".repeat(25)).matches(&"a".repeat(1000)));
        assert!(!p(&format!("{}b", "*a".repeat(25))).matches(&"a".repeat(1000)));
    }

    // fnmatch.translate's classes, checked against CPython 3.11's
    // fnmatch.fnmatchcase.
    #[test]
    fn classes_like_fnmatch() {
        let cases: &[(&str, &str, bool)] = &[
            ("[z-a]", "a", false),
            ("[z-a]", "z", false),
            ("[!z-a]", "q", true),
            ("[xz-ay]", "y", true),
            ("[xz-ay]", "b", false),
            ("[a-]", "-", true),
            ("[-a]", "-", true),
            ("[!-a]", "b", true),
            ("[!-a]", "-", false),
            ("[]-a]", "^", true),
            ("[a-z-0]", "-", true),
            ("[a-z-0]", "0", true),
            ("[a-é]", "é", true),
            ("[a-é]", "z", true),
            ("[a-é]", "ê", false),
            ("[!é]", "e", true),
            ("[!é]", "é", false),
            ("[", "[", true),
            ("[!", "[!", true),
            ("[!]", "[!]", true),
            ("a[", "a[", true),
            ("[[]", "[", true),
            ("x[!]]", "xa", true),
            ("x[!]]", "x]", false),
        ];
        for (pat, name, want) in cases {
            assert_eq!(wild(pat).matches(name), *want, "{pat:?} vs {name:?}");
        }
    }

    #[test]
    fn bounds_are_bad_arguments_naming_the_bound() {
        let bad = |pat: &str, bound: &str, size: usize| {
            let e = parse_pattern(pat).unwrap_err();
            assert_eq!(e.type_name, "BadArgument", "{pat:.40}");
            assert!(
                e.message.contains(bound) && e.message.contains(&size.to_string()),
                "{}",
                e.message
            );
        };
        bad(&("**/".repeat(10_000) + "x"), "MAX_PATTERN_BYTES", 30_001);
        bad(&"[".repeat(300_000), "MAX_PATTERN_BYTES", 300_000);
        bad(
            &"a".repeat(MAX_PATTERN_BYTES + 1),
            "MAX_PATTERN_BYTES",
            4097,
        );
        bad(&"a/".repeat(MAX_COMPONENTS + 1), "MAX_COMPONENTS", 257);
        bad(
            &"**/a/".repeat(MAX_RECURSIVE + 1),
            "MAX_RECURSIVE",
            MAX_RECURSIVE + 1,
        );
        bad(
            &format!("[{}]", "x".repeat(MAX_CLASS_ITEMS + 1)),
            "MAX_CLASS_ITEMS",
            MAX_CLASS_ITEMS + 1,
        );
        // At the bounds: accepted.
        assert!(parse_pattern(&"a".repeat(MAX_PATTERN_BYTES)).is_ok());
        assert!(parse_pattern(&"[".repeat(MAX_PATTERN_BYTES)).is_ok());
        assert!(parse_pattern(&"a/".repeat(MAX_COMPONENTS)).is_ok());
        assert!(parse_pattern(&"**/a/".repeat(MAX_RECURSIVE)).is_ok());
        assert!(parse_pattern(&format!("[{}]", "x".repeat(MAX_CLASS_ITEMS))).is_ok());
        // Dropped components do not count.
        assert!(parse_pattern(&("./".repeat(1000) + "a")).is_ok());
    }

    #[test]
    fn parsing_is_linear() {
        // Quadratic parsing of 4096 '[' would be ~8M steps; these must be
        // instant. The bound keeps it small; the algorithm keeps it linear
        // (checked on the component parser directly, beyond the bound).
        let t = std::time::Instant::now();
        for s in [
            "[".repeat(200_000),
            "[!".repeat(100_000),
            "[]".repeat(100_000),
        ] {
            let m = wild(&s);
            assert!(!m.matches("x"));
        }
        assert!(t.elapsed() < std::time::Duration::from_secs(20));
        let m = wild(&"[".repeat(1000));
        assert!(m.matches(&"[".repeat(1000)));
        assert!(!m.matches(&"[".repeat(999)));
    }

    /// The pre-fix recursive selection: the reference the work-list walk
    /// must agree with on small trees.
    fn reference(w: &Workspace, pattern: &str) -> Vec<String> {
        fn sel(walk: &mut Walk<'_>, rel: &str, parts: &[Part], dirs: bool, out: &mut Vec<String>) {
            let Some((first, rest)) = parts.split_first() else {
                out.push(if rel.is_empty() {
                    ".".into()
                } else {
                    rel.into()
                });
                return;
            };
            let dir_only = !rest.is_empty() || dirs;
            match first {
                Part::Precise(name) => {
                    let child = join(rel, name);
                    if walk.exists(&child, dir_only) {
                        sel(walk, &child, rest, dirs, out);
                    }
                }
                Part::Wild(m) => {
                    for (name, kind) in walk.list(rel).unwrap() {
                        if dir_only && kind == Kind::Other {
                            continue;
                        }
                        if m.matches(&name) {
                            sel(walk, &join(rel, &name), rest, dirs, out);
                        }
                    }
                }
                Part::Recursive => {
                    let mut below = vec![rel.to_string()];
                    let mut stack = vec![rel.to_string()];
                    while let Some(d) = stack.pop() {
                        for (name, kind) in walk.list(&d).unwrap() {
                            if kind == Kind::Dir {
                                let sub = join(&d, &name);
                                below.push(sub.clone());
                                stack.push(sub);
                            }
                        }
                    }
                    for d in below {
                        sel(walk, &d, rest, dirs, out);
                    }
                }
            }
        }
        let p = parse_pattern(pattern).unwrap();
        let mut walk = new_walk(w);
        let mut out = Vec::new();
        sel(&mut walk, "", &p.parts, p.dirs_only, &mut out);
        out.sort();
        out.dedup();
        out
    }

    fn new_walk(ws: &Workspace) -> Walk<'_> {
        Walk::new(ws, &RunContext::default())
    }

    #[test]
    fn work_list_agrees_with_recursive_selection() {
        let (d, w) = tree();
        fs::create_dir_all(d.path().join("src/sub/deeper/x")).unwrap();
        fs::write(d.path().join("src/sub/deeper/x/m.py"), "").unwrap();
        fs::write(d.path().join("src/sub/deeper/[x]"), "").unwrap();
        for pat in [
            "*.py",
            "*",
            "**",
            "**/*.py",
            "**/**/*.py",
            "**/sub/**",
            "**/*/**/*.py",
            "*/**/*",
            "src/**/x/**/*.py",
            "**/[!s]*",
            "**/deeper/[[]x]",
            "src_link/**",
            "*/*/*",
            "**/x",
            "./**/./*.txt",
            "src/sub",
            "src/sub/",
            "nope/**",
            "**/**/**/**/**/m.py",
            "*_link/*",
        ] {
            assert_eq!(ff(&w, pat), reference(&w, pat), "{pat}");
        }
    }

    #[test]
    fn deep_recursive_chains_are_cheap() {
        // A chain 40 directories deep and 32 `**` components: the
        // recursive selection listed O(depth^k) directories; the work list
        // lists each directory at most once per component.
        let d = tempfile::tempdir().unwrap();
        let deep = "d/".repeat(40);
        fs::create_dir_all(d.path().join(&deep)).unwrap();
        fs::write(d.path().join(format!("{deep}x")), "").unwrap();
        let w = Workspace::open(d.path()).unwrap();
        let pat = format!(
            "{}x",
            "**/d/".repeat(MAX_RECURSIVE / 2) + &"**/".repeat(MAX_RECURSIVE / 2)
        );
        let mut walk = new_walk(&w);
        walk.run(&parse_pattern(&pat).unwrap().parts, false)
            .unwrap();
        assert_eq!(walk.out, vec![format!("{deep}x")]);
        assert!(
            walk.visits <= 41 * MAX_RECURSIVE,
            "{} listings",
            walk.visits
        );
        let pat = format!("{}x", "**/*/".repeat(MAX_RECURSIVE));
        assert_eq!(ff(&w, &pat), vec![format!("{deep}x")]);
        let pat = format!("{}y", "**/*/".repeat(MAX_RECURSIVE));
        assert_eq!(ff(&w, &pat), Vec::<String>::new());
        let pat = format!("{}**/x", "*/".repeat(41));
        assert_eq!(ff(&w, &pat), Vec::<String>::new());
    }

    #[test]
    fn stops_at_the_deadline_and_on_cancel() {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        let (_d, w) = tree();
        let past = std::time::Instant::now() - std::time::Duration::from_millis(1);
        let e = find_files(&w, "**/*", &RunContext::new(past, None)).unwrap_err();
        assert_eq!(e.type_name, "Timeout");
        let later = std::time::Instant::now() + std::time::Duration::from_secs(3600);
        let flag = Arc::new(AtomicBool::new(true));
        let e = find_files(&w, "**/*", &RunContext::new(later, Some(flag))).unwrap_err();
        assert_eq!(e.type_name, "Timeout");
        assert!(e.message.contains("cancelled"), "{}", e.message);
        let ok = find_files(&w, "**/*.py", &RunContext::new(later, None));
        assert_eq!(ok.unwrap().len(), 4);
    }

    #[test]
    fn selects_files_by_path_folder_or_pattern() {
        let sel = |pat: &str, path: &str| parse_pattern(pat).unwrap().selects_file(path);
        assert!(sel("src/a.py", "src/a.py"));
        assert!(!sel("src/a.py", "src/ab.py"));
        assert!(!sel("src/a.py", "x/src/a.py"));
        // A folder selects what is beneath it, not a file of its name.
        assert!(sel("src", "src/a.py"));
        assert!(sel("src/", "src/sub/a.py"));
        assert!(!sel("src/", "src"));
        assert!(!sel("sr", "src/a.py"));
        // `**` matches zero or more components.
        assert!(sel("**/a.py", "a.py"));
        assert!(sel("**/a.py", "x/y/a.py"));
        assert!(sel("src/**/*.py", "src/a.py"));
        assert!(sel("src/**/*.py", "src/x/y/b.py"));
        assert!(!sel("src/**/*.py", "lib/a.py"));
        assert!(sel("*/t?st_[a-z].py", "tests/test_a.py"));
        assert!(!sel("*/t?st_[a-z].py", "tests/test_1.py"));
        assert!(!sel("a.py", ""));
        // Many `**` against a deep path stays linear per component.
        let deep = vec!["d"; 200].join("/") + "/x.py";
        let many = vec!["**"; MAX_RECURSIVE].join("/x/") + "/nope.py";
        assert!(!sel(&many, &deep));
    }
}
