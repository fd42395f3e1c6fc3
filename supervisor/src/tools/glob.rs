//! `find_files(pattern)`: CPython 3.11's `pathlib.Path(".").glob(pattern)`
//! over the workspace, walked with descriptors resolved beneath it.
//!
//! Semantics kept from CPython 3.11: components split on `/` with empty and
//! `.` components dropped; `*`, `?`, `[seq]`, `[!seq]` per `fnmatch`
//! (case-sensitive, hidden names included); `**` as a whole component
//! matches the directory itself and every directory below it, never
//! following symlinks; a wildcard component that is not last only matches
//! directories (following symlinks — here, only symlinks that stay inside);
//! a pattern ending in `**` yields directories only; the root prints as
//! `.`. Results are sorted by plain string order. Differences, on purpose:
//! `..` components and absolute patterns are refused (CPython would climb
//! out), and a symlink pointing outside the workspace is never followed.

use super::fs::{fail, openat2, Workspace};
use lackpy_policy::wire::ToolFailure;
use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, OwnedFd};

/// Most paths one call returns.
/// Why: the result must fit in one IPC frame and a program's memory; 100k
/// short paths are a few MiB.
pub const MAX_RESULTS: usize = 100_000;
/// Most directories one call visits (bounds work on huge trees and symlink loops).
pub const MAX_VISITS: usize = 200_000;

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Precise(String),
    Wild(Vec<Tok>),
    Recursive,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Char(char),
    Any,
    AnySeq,
    Class {
        negate: bool,
        items: Vec<(char, char)>,
    },
}

fn parse_component(c: &str) -> Result<Part, ToolFailure> {
    if c == "**" {
        return Ok(Part::Recursive);
    }
    if c.contains("**") {
        return Err(fail(
            "BadArgument",
            "Invalid pattern: '**' can only be an entire path component",
        ));
    }
    if !c.contains(['*', '?', '[']) {
        return Ok(Part::Precise(c.to_string()));
    }
    let chars: Vec<char> = c.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => toks.push(Tok::AnySeq),
            '?' => toks.push(Tok::Any),
            '[' => {
                // fnmatch.translate: find the closing ']' (a ']' right after '[' or '[!' is literal).
                let mut j = i + 1;
                if j < chars.len() && chars[j] == '!' {
                    j += 1;
                }
                if j < chars.len() && chars[j] == ']' {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    j += 1;
                }
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
                    toks.push(Tok::Class { negate, items });
                    i = j;
                }
            }
            ch => toks.push(Tok::Char(ch)),
        }
        i += 1;
    }
    Ok(Part::Wild(toks))
}

/// Does `name` match the tokens? Iterative backtracking over `*` (linear-ish, no recursion).
fn matches(toks: &[Tok], name: &str) -> bool {
    let s: Vec<char> = name.chars().collect();
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
            Some(Tok::Class { negate, items }) => {
                let hit = items.iter().any(|(lo, hi)| *lo <= s[i] && s[i] <= *hi);
                hit != *negate
            }
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

/// Parse a pattern into components.
fn parse(pattern: &str) -> Result<Vec<Part>, ToolFailure> {
    if pattern.contains('\0') {
        return Err(fail("BadArgument", "pattern contains a NUL byte"));
    }
    if pattern.starts_with('/') {
        return Err(fail(
            "PathOutsideWorkspace",
            "Non-relative patterns are unsupported",
        ));
    }
    let mut parts = Vec::new();
    for c in pattern.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                return Err(fail(
                    "PathOutsideWorkspace",
                    format!("pattern {pattern:?} climbs out of the workspace"),
                ))
            }
            c => parts.push(parse_component(c)?),
        }
    }
    if parts.is_empty() {
        return Err(fail(
            "BadArgument",
            format!("Unacceptable pattern: {pattern:?}"),
        ));
    }
    Ok(parts)
}

struct Walk<'a> {
    ws: &'a Workspace,
    out: Vec<String>,
    visits: usize,
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

impl Walk<'_> {
    fn open_dir(&mut self, rel: &str) -> Option<OwnedFd> {
        let c = CString::new(if rel.is_empty() { "." } else { rel }).ok()?;
        openat2(self.ws.fd(), &c, libc::O_RDONLY | libc::O_DIRECTORY, 0).ok()
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
        openat2(self.ws.fd(), &c, flags, 0).is_ok()
    }

    /// Directory entries of `rel` with their kind (symlinks classified by
    /// whether they resolve to a directory *inside* the workspace).
    fn list(&mut self, rel: &str) -> Result<Vec<(String, Kind)>, ToolFailure> {
        self.visits += 1;
        if self.visits > MAX_VISITS {
            return Err(fail(
                "TooLarge",
                format!("pattern visits more than {MAX_VISITS} directories"),
            ));
        }
        let Some(fd) = self.open_dir(rel) else {
            return Ok(Vec::new());
        };
        // SAFETY: fdopendir takes ownership of a valid directory descriptor.
        let dir = unsafe { libc::fdopendir(fd.as_raw_fd()) };
        if dir.is_null() {
            return Ok(Vec::new());
        }
        std::mem::forget(fd); // now owned by `dir`
        let mut entries = Vec::new();
        loop {
            // SAFETY: `dir` is a valid DIR* until closedir below.
            let ent = unsafe { libc::readdir(dir) };
            if ent.is_null() {
                break;
            }
            // SAFETY: readdir returned a valid dirent whose d_name is NUL-terminated.
            let (name, dtype) = unsafe { (CStr::from_ptr((*ent).d_name.as_ptr()), (*ent).d_type) };
            let Ok(name) = name.to_str() else { continue }; // non-UTF-8 names cannot reach a program
            if name == "." || name == ".." {
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
        // SAFETY: closing the DIR* we opened (also closes the descriptor).
        unsafe { libc::closedir(dir) };
        Ok(entries)
    }

    fn push(&mut self, rel: &str) -> Result<(), ToolFailure> {
        if self.out.len() >= MAX_RESULTS {
            return Err(fail(
                "TooLarge",
                format!("pattern matches more than {MAX_RESULTS} paths"),
            ));
        }
        self.out.push(if rel.is_empty() {
            ".".to_string()
        } else {
            rel.to_string()
        });
        Ok(())
    }

    /// Select `parts` starting at directory `rel` (which exists and is a directory
    /// when parts is non-empty, or is a match to yield when it is empty).
    fn select(&mut self, rel: &str, parts: &[Part]) -> Result<(), ToolFailure> {
        let Some((first, rest)) = parts.split_first() else {
            return self.push(rel);
        };
        let dir_only = !rest.is_empty();
        match first {
            Part::Precise(name) => {
                let child = join(rel, name);
                if self.exists(&child, dir_only) {
                    self.select(&child, rest)?;
                }
            }
            Part::Wild(toks) => {
                for (name, kind) in self.list(rel)? {
                    if dir_only && kind == Kind::Other {
                        continue;
                    }
                    if matches(toks, &name) {
                        self.select(&join(rel, &name), rest)?;
                    }
                }
            }
            Part::Recursive => {
                // Every directory from `rel` down, never through symlinks (CPython 3.11).
                let mut dirs = vec![rel.to_string()];
                let mut stack = vec![rel.to_string()];
                while let Some(d) = stack.pop() {
                    for (name, kind) in self.list(&d)? {
                        if kind == Kind::Dir {
                            let sub = join(&d, &name);
                            dirs.push(sub.clone());
                            stack.push(sub);
                        }
                    }
                }
                for d in dirs {
                    self.select(&d, rest)?;
                }
            }
        }
        Ok(())
    }
}

/// Run `pattern` against the workspace; sorted, deduplicated matches.
///
/// # Errors
/// `BadArgument` for a malformed pattern, `PathOutsideWorkspace` for `..`
/// or absolute patterns, `TooLarge` past [`MAX_RESULTS`]/[`MAX_VISITS`].
pub fn find_files(ws: &Workspace, pattern: &str) -> Result<Vec<String>, ToolFailure> {
    let parts = parse(pattern)?;
    let mut w = Walk {
        ws,
        out: Vec::new(),
        visits: 0,
    };
    w.select("", &parts)?;
    let mut out = w.out;
    out.sort();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
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
        find_files(w, pat).unwrap()
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
    }

    #[test]
    fn never_leaves_the_workspace() {
        let (_d, w) = tree();
        assert_eq!(ff(&w, "etc_link/*"), Vec::<String>::new());
        assert_eq!(ff(&w, "etc_link/passwd"), Vec::<String>::new());
        assert_eq!(
            find_files(&w, "../*").unwrap_err().type_name,
            "PathOutsideWorkspace"
        );
        assert_eq!(
            find_files(&w, "/etc/*").unwrap_err().type_name,
            "PathOutsideWorkspace"
        );
        assert_eq!(find_files(&w, "").unwrap_err().type_name, "BadArgument");
        assert_eq!(find_files(&w, "a**").unwrap_err().type_name, "BadArgument");
    }

    #[test]
    fn matcher() {
        let p = |s: &str| match parse_component(s).unwrap() {
            Part::Wild(t) => t,
            _ => panic!("not wild"),
        };
        assert!(matches(&p("*a*b*c*"), "xxaxxbxxcxx"));
        assert!(!matches(&p("*a*b*c*d"), "xxaxxbxxcxx"));
        assert!(matches(&p("[]]x"), "]x"));
        assert!(matches(&p("[a-c]*"), "b"));
        assert!(matches(&p("[*"), "[*x") || !matches(&p("[*"), "["));
        // Many stars against a long name stays fast (no exponential backtracking).
        assert!(matches(&p(&"*a".repeat(25)), &"a".repeat(1000)));
        assert!(!matches(
            &p(&format!("{}b", "*a".repeat(25))),
            &"a".repeat(1000)
        ));
    }
}
