//! Workspace-confined file access.
//!
//! Every path a program gives is resolved by the kernel *beneath* the
//! workspace directory's descriptor: `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_MAGICLINKS)`. `..` that stays inside works; `..` that leaves,
//! absolute paths, symlinks pointing out (absolute or relative) and
//! `/proc` magic links all fail with `EXDEV`/`ELOOP`, reported as
//! `PathOutsideWorkspace`. Nothing here ever opens a path by name from the
//! process's root or cwd. Reads open `O_PATH` first and only a regular file
//! for I/O; the control directory `.lackpy/` is neither read nor written.

use crate::call::{RunContext, WriteBudget};
use lackpy_policy::wire::{ToolFailure, WRITE_BLOCK};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

/// Largest file `read_file`/`edit_file` reads, in bytes.
/// Why 8 MiB: the default result limit; a tool result must fit in one IPC frame (16 MiB).
pub const READ_CAP: u64 = 8 * 1024 * 1024;
/// Largest content `write_file`/`edit_file` writes, in bytes (same reason).
pub const WRITE_CAP: usize = 8 * 1024 * 1024;
/// Longest path accepted, in bytes (Linux's PATH_MAX).
const PATH_CAP: usize = 4096;

const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_BENEATH: u64 = 0x08;

/// An open workspace directory.
#[derive(Debug)]
pub struct Workspace {
    dir: OwnedFd,
    /// The path it was opened as (the confined tool lanes key on it).
    path: std::path::PathBuf,
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

impl Workspace {
    /// Open `path` as the workspace root.
    ///
    /// # Errors
    /// The `open` error (missing, not a directory, ...).
    pub fn open(path: &Path) -> std::io::Result<Self> {
        use std::os::unix::ffi::OsStrExt;
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: `c` is NUL-terminated.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fresh descriptor owned by nobody else.
        let dir = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Workspace {
            dir,
            path: path.to_path_buf(),
        })
    }

    /// The path the workspace was opened as.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A second handle on the same open directory (`dup`).
    ///
    /// # Errors
    /// The `dup` error.
    pub fn try_clone(&self) -> std::io::Result<Self> {
        Ok(Workspace {
            dir: self.dir.try_clone()?,
            path: self.path.clone(),
        })
    }

    /// The root descriptor.
    pub fn fd(&self) -> RawFd {
        self.dir.as_raw_fd()
    }
}

/// Check a program-supplied path before it reaches the kernel.
///
/// # Errors
/// `BadArgument` for empty/NUL/overlong paths, `PathOutsideWorkspace` for absolute ones.
pub fn check_path(path: &str) -> Result<CString, ToolFailure> {
    if path.is_empty() {
        return Err(ToolFailure::new("BadArgument", "path is empty"));
    }
    if path.len() > PATH_CAP {
        return Err(ToolFailure::new(
            "BadArgument",
            format!("path is longer than {PATH_CAP} bytes"),
        ));
    }
    if path.starts_with('/') {
        return Err(ToolFailure::new(
            "PathOutsideWorkspace",
            format!("{path:?} is absolute; paths are relative to the workspace"),
        ));
    }
    CString::new(path).map_err(|_| ToolFailure::new("BadArgument", "path contains a NUL byte"))
}

/// Map an errno from resolving `path` to the tool error the contract names.
pub fn resolve_error(path: &str, e: i32) -> ToolFailure {
    match e {
        libc::EXDEV => ToolFailure::new(
            "PathOutsideWorkspace",
            format!("{path:?} resolves outside the workspace"),
        ),
        libc::ELOOP => ToolFailure::new(
            "PathOutsideWorkspace",
            format!("{path:?} goes through a /proc magic link or too many symlinks"),
        ),
        libc::ENOENT => ToolFailure::new("FileNotFound", format!("no such file: {path:?}")),
        libc::ENOTDIR => ToolFailure::new(
            "FileNotFound",
            format!("no such file: {path:?} (a parent is not a directory)"),
        ),
        libc::EISDIR => ToolFailure::new("IsADirectory", format!("{path:?} is a directory")),
        libc::EACCES | libc::EPERM => {
            ToolFailure::new("ToolFailed", format!("permission denied: {path:?}"))
        }
        libc::ENAMETOOLONG => ToolFailure::new("BadArgument", format!("path too long: {path:?}")),
        libc::ESTALE => ToolFailure::new(
            "ToolFailed",
            format!("{path:?} was replaced while it was being opened; try again"),
        ),
        libc::EROFS => ToolFailure::new("ToolFailed", format!("read-only file system: {path:?}")),
        libc::ENOSPC | libc::EDQUOT => {
            ToolFailure::new("ToolFailed", format!("no space left writing {path:?}"))
        }
        _ => ToolFailure::new(
            "ToolFailed",
            format!("{path:?}: {}", std::io::Error::from_raw_os_error(e)),
        ),
    }
}

/// `openat2(dir, path, flags, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`
/// (symlinks that stay beneath `dir` are followed; see
/// [`lackpy_beneath::openat2`]).
///
/// # Errors
/// The raw errno.
pub fn openat2(dir: RawFd, path: &CString, flags: i32, mode: u32) -> Result<OwnedFd, i32> {
    lackpy_beneath::openat2(
        dir,
        path,
        flags,
        mode,
        RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    )
}

fn fstat(fd: RawFd) -> Result<libc::stat, i32> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes one stat struct.
    if unsafe { libc::fstat(fd, st.as_mut_ptr()) } != 0 {
        return Err(errno());
    }
    // SAFETY: fstat succeeded.
    Ok(unsafe { st.assume_init() })
}

/// Read a regular file beneath the workspace as UTF-8.
///
/// # Errors
/// `PathOutsideWorkspace FileNotFound IsADirectory NotUtf8 TooLarge BadArgument ToolFailed`.
pub fn read_text(ws: &Workspace, path: &str) -> Result<String, ToolFailure> {
    let c = check_path(path)?;
    refuse_control_read(ws, None, path)?;
    // O_PATH first: nothing is opened for I/O until `fstat` has said it is
    // a regular file (opening a device node can have effects of its own).
    let at = openat2(ws.fd(), &c, libc::O_PATH, 0).map_err(|e| resolve_error(path, e))?;
    refuse_control_read(ws, Some(&at), path)?;
    let st = fstat(at.as_raw_fd()).map_err(|e| resolve_error(path, e))?;
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => {}
        libc::S_IFDIR => {
            return Err(ToolFailure::new(
                "IsADirectory",
                format!("{path:?} is a directory"),
            ))
        }
        _ => {
            return Err(ToolFailure::new(
                "BadArgument",
                format!("{path:?} is not a regular file"),
            ))
        }
    }
    let size = u64::try_from(st.st_size).unwrap_or(0);
    if size > READ_CAP {
        return Err(ToolFailure::new(
            "TooLarge",
            format!("{path:?} is {size} bytes; the limit is {READ_CAP}"),
        ));
    }
    let fd = reopen_regular(ws.fd(), &c, 0, &at, &st).map_err(|e| resolve_error(path, e))?;
    let mut file = std::fs::File::from(fd);
    let buf = read_capped(&mut file, size).map_err(|e| resolve_error(path, e))?;
    if buf.len() as u64 > READ_CAP {
        return Err(ToolFailure::new(
            "TooLarge",
            format!("{path:?} is larger than {READ_CAP} bytes"),
        ));
    }
    String::from_utf8(buf).map_err(|e| {
        ToolFailure::new(
            "NotUtf8",
            format!(
                "{path:?} is not valid UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// Open for reading the regular file `at` (an `O_PATH` descriptor whose
/// `fstat` is `st`, opened as `name` beneath `dir` with `extra` flags):
/// through `/proc/self/fd`, which reopens that very inode, so a file
/// swapped for a device node or a FIFO since the `fstat` is never opened.
/// Where `/proc` cannot be used, `name` is opened again beneath `dir`
/// (`O_NONBLOCK | O_NOCTTY`). Either way the result is checked by inode before any read.
///
/// # Errors
/// The raw errno (`ESTALE` when the file changed in between).
fn reopen_regular(
    dir: RawFd,
    name: &CString,
    extra: i32,
    at: &OwnedFd,
    st: &libc::stat,
) -> Result<OwnedFd, i32> {
    let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    let proc_path =
        CString::new(format!("/proc/self/fd/{}", at.as_raw_fd())).map_err(|_| libc::EINVAL)?;
    // SAFETY: `proc_path` is NUL-terminated; it names the regular file
    // `at` refers to, and the flags never block.
    let raw = unsafe { libc::open(proc_path.as_ptr(), flags) };
    let fd = if raw >= 0 {
        // SAFETY: a fresh descriptor owned by nobody else.
        unsafe { OwnedFd::from_raw_fd(raw) }
    } else {
        openat2(dir, name, flags | extra, 0)?
    };
    let now = fstat(fd.as_raw_fd())?;
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino)
        || now.st_mode & libc::S_IFMT != libc::S_IFREG
    {
        return Err(libc::ESTALE);
    }
    Ok(fd)
}

/// Open the regular file `name` beneath `dir` for reading (resolved with
/// [`openat2`] and `extra` flags such as `O_NOFOLLOW`): `O_PATH` first,
/// then only a regular file is opened for I/O (see [`reopen_regular`]).
///
/// # Errors
/// The raw errno; `EINVAL` for anything but a regular file.
pub(crate) fn open_regular(
    dir: RawFd,
    name: &CString,
    extra: i32,
) -> Result<(OwnedFd, libc::stat), i32> {
    let at = openat2(dir, name, libc::O_PATH | extra, 0)?;
    let st = fstat(at.as_raw_fd())?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(libc::EINVAL);
    }
    Ok((reopen_regular(dir, name, extra, &at, &st)?, st))
}

/// The kernel's name of the open descriptor `fd` (`/proc/self/fd`).
fn fd_path(fd: RawFd) -> Option<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()
}

/// Whether the open descriptor `fd` names something inside the workspace's
/// control directory (compared by the kernel's names of `fd` and of the
/// workspace root; `false` when `/proc` cannot name them).
pub(crate) fn in_control_dir(ws_root: Option<&Path>, fd: RawFd) -> bool {
    let (Some(root), Some(p)) = (ws_root, fd_path(fd)) else {
        return false;
    };
    p.starts_with(root.join(CONTROL_DIR))
}

/// The kernel's name of the workspace root (for [`in_control_dir`]).
pub(crate) fn root_path(ws: &Workspace) -> Option<std::path::PathBuf> {
    fd_path(ws.fd())
}

/// Refuse reading a file of the workspace's control directory: its config
/// (which may hold literal secrets for tools and servers: `env`,
/// `headers`), the traces of every client's runs and the python tool
/// modules are lackpy's, not a program's. Child jails never see
/// `.lackpy/`; the builtin reads do not either. Judged on the file actually
/// opened (`at`: a symlink inside the workspace to `.lackpy/...` is
/// refused), or by name before anything is opened (`at` is `None`), so a
/// program cannot even learn which files exist there.
fn refuse_control_read(
    ws: &Workspace,
    at: Option<&OwnedFd>,
    path: &str,
) -> Result<(), ToolFailure> {
    let inside = match at {
        // `..` folded lexically (`sub/../.lackpy/x`); a path climbing out
        // is refused by the open that follows.
        None => fold(path).is_some_and(|c| c.first() == Some(&CONTROL_DIR)),
        Some(fd) => in_control_dir(root_path(ws).as_deref(), fd.as_raw_fd()),
    };
    if inside {
        return Err(ToolFailure::new(
            "PathOutsideWorkspace",
            format!(
                "{path:?} is inside {CONTROL_DIR}/, lackpy's own config, tool modules and traces; programs may not read or write there"
            ),
        ));
    }
    Ok(())
}

/// Largest file [`read_capped`] reads with a single `read` call.
const ONE_READ_MAX: u64 = 64 * 1024;

/// Read a regular file that `fstat` said is `size` bytes, up to
/// `READ_CAP + 1` bytes (so the caller can tell it was too large).
///
/// Why not just `read_to_end`: with a buffer of exactly `size` bytes it
/// needs a second `read` to see the end of the file. Asking for one byte
/// more than `size` gets the whole file and proves the end in one call: a
/// regular file's `read` returns fewer bytes than asked only at its end. A
/// file that grew since the `fstat` is read on to its (capped) end.
fn read_capped(file: &mut std::fs::File, size: u64) -> Result<Vec<u8>, i32> {
    use std::io::Read;
    let errno = |e: std::io::Error| e.raw_os_error().unwrap_or(libc::EIO);
    let mut buf = Vec::new();
    if size < ONE_READ_MAX {
        let want = size as usize + 1;
        buf.resize(want, 0);
        let n = loop {
            match file.read(&mut buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(errno(e)),
            }
        };
        buf.truncate(n);
        if n < want {
            return Ok(buf);
        }
    } else {
        buf.reserve(size as usize);
    }
    let have = buf.len() as u64;
    file.take((READ_CAP + 1).saturating_sub(have))
        .read_to_end(&mut buf)
        .map_err(errno)?;
    Ok(buf)
}

/// The components of the relative `path` with `.` dropped and `..` folded
/// lexically; `None` when a `..` would climb above the workspace.
fn fold(path: &str) -> Option<Vec<&str>> {
    let mut comps: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                comps.pop()?;
            }
            c => comps.push(c),
        }
    }
    Some(comps)
}

/// Split a relative path into (parent components, file name), lexically
/// resolving `.` and `..`; a `..` that climbs above the root is outside.
fn split_parent(path: &str) -> Result<(Vec<&str>, &str), ToolFailure> {
    let mut comps = fold(path).ok_or_else(|| {
        ToolFailure::new(
            "PathOutsideWorkspace",
            format!("{path:?} climbs out of the workspace"),
        )
    })?;
    let name = comps.pop().ok_or_else(|| {
        ToolFailure::new(
            "IsADirectory",
            format!("{path:?} names the workspace itself"),
        )
    })?;
    if path.ends_with('/') {
        return Err(ToolFailure::new(
            "IsADirectory",
            format!("{path:?} names a directory"),
        ));
    }
    Ok((comps, name))
}

fn cstr(s: &str) -> Result<CString, ToolFailure> {
    CString::new(s).map_err(|_| ToolFailure::new("BadArgument", "path contains a NUL byte"))
}

/// Open (creating as needed, each new directory charged to `run`'s write
/// budget) the directory `comps` beneath the workspace.
fn open_parent(
    ws: &Workspace,
    comps: &[&str],
    run: &RunContext,
    path: &str,
) -> Result<OwnedFd, ToolFailure> {
    let rel = if comps.is_empty() {
        ".".to_string()
    } else {
        comps.join("/")
    };
    let flags = libc::O_PATH | libc::O_DIRECTORY;
    match openat2(ws.fd(), &cstr(&rel)?, flags, 0) {
        Ok(fd) => return Ok(fd),
        Err(libc::ENOENT) => {}
        Err(e) => return Err(resolve_error(path, e)),
    }
    // mkdir -p. The directories that exist are resolved beneath the
    // workspace (symlinks that stay inside followed, as for the file
    // itself). Before the first directory is created, its parent is checked
    // against the control directory by inode: a symlink inside the
    // workspace to `.lackpy/` (or to `.` when `.lackpy` is absent) must not
    // let a program create directories there — an empty directory named
    // like a trace file, `config.toml` or a kit breaks the runs that trust
    // them. Below that point every directory is one this call created,
    // opened from its parent's descriptor without following a symlink.
    let mut dir = openat2(ws.fd(), &cstr(".")?, flags, 0).map_err(|e| resolve_error(path, e))?;
    let mut creating = false;
    for (i, comp) in comps.iter().enumerate() {
        let name = cstr(comp)?;
        if !creating {
            let sub = comps[..=i].join("/");
            match openat2(ws.fd(), &cstr(&sub)?, flags, 0) {
                Ok(fd) => {
                    dir = fd;
                    continue;
                }
                Err(libc::ENOENT) => {}
                Err(e) => return Err(resolve_error(path, e)),
            }
            refuse_inside_control_dir(ws, &dir, path)?;
            refuse_protected_entry(ws, &dir, comp.as_bytes(), path)?;
            creating = true;
        }
        run.charge_write(
            WRITE_BLOCK,
            &format!("creating a directory for {}", brief(path)),
        )?;
        // SAFETY: `name` is NUL-terminated; `dir` is an open directory descriptor.
        let rc = unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o755) };
        if rc != 0 && errno() != libc::EEXIST {
            return Err(resolve_error(path, errno()));
        }
        // SAFETY: a plain name (no `/`) in an open directory; O_NOFOLLOW: a
        // symlink raced in under that name is refused (ENOTDIR), not followed.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(resolve_error(path, errno()));
        }
        // SAFETY: a fresh descriptor owned by nobody else.
        dir = unsafe { OwnedFd::from_raw_fd(fd) };
    }
    Ok(dir)
}

/// `path` quoted for a message, its first 100 characters at most (a
/// 4 KiB path would otherwise fill the run's error).
fn brief(path: &str) -> String {
    match path.char_indices().nth(100) {
        None => format!("{path:?}"),
        Some((at, _)) => format!("{:?}… ({} bytes)", &path[..at], path.len()),
    }
}

fn next_tmp_name(name: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(".{name}.lackpy-{}-{n}.tmp", std::process::id())
}

/// The workspace's control directory (config, kits, templates, traces).
pub const CONTROL_DIR: &str = ".lackpy";

/// The name of a git repository's directory (or of the file that points a
/// worktree or submodule at one).
pub const GIT_DIR: &str = ".git";

/// Why a write into a `.git` directory (or of a `.git` file) is refused.
fn git_dir_refusal(path: &str) -> ToolFailure {
    ToolFailure::new(
        "PathOutsideWorkspace",
        format!(
            "{path:?} is inside a {GIT_DIR} directory (or is one): git runs its hooks and obeys its config outside any jail, so programs may not write there; write the project's files and leave version control to the user"
        ),
    )
}

/// Whether git would take `content`, in a file named `HEAD`, for a
/// repository's HEAD (`validate_headref` in git's `setup.c`): `ref:`,
/// optional whitespace, then `refs/`; or a SHA-1 or SHA-256 object name
/// (40 or 64 hex digits) at its start.
fn is_git_head(content: &str) -> bool {
    if let Some(rest) = content.strip_prefix("ref:") {
        return rest.trim_start().starts_with("refs/");
    }
    content.len() >= 40 && content.as_bytes()[..40].iter().all(u8::is_ascii_hexdigit)
}

/// Why a git HEAD is refused: with it, a directory that also holds
/// `objects/` and `refs/` (or a `commondir` naming one that does) is a bare
/// repository to git, found before any `.git` above it, and its `config`
/// is obeyed outside any jail (`core.fsmonitor` on the next `git status`
/// run there, by the user, an IDE or a shell prompt).
fn git_head_refusal(path: &str) -> ToolFailure {
    ToolFailure::new(
        "PathOutsideWorkspace",
        format!(
            "{path:?} would be a git HEAD: next to objects/ and refs/ it makes its directory a repository whose config git obeys outside any jail, so programs may not write one; leave version control to the user"
        ),
    )
}

/// Refuse creating or writing the entry `name` of directory `dir`: the
/// control directory itself (when `dir` is the workspace root) or a `.git`
/// (in any directory). What lies *inside* either is refused by
/// [`refuse_inside_control_dir`].
fn refuse_protected_entry(
    ws: &Workspace,
    dir: &OwnedFd,
    name: &[u8],
    path: &str,
) -> Result<(), ToolFailure> {
    if name == GIT_DIR.as_bytes() {
        return Err(git_dir_refusal(path));
    }
    if name == CONTROL_DIR.as_bytes()
        && dir_id(dir.as_raw_fd(), &cstr("")?) == dir_id(ws.fd(), &cstr("")?)
    {
        return Err(control_dir_refusal(path));
    }
    Ok(())
}

fn control_dir_refusal(path: &str) -> ToolFailure {
    ToolFailure::new(
        "PathOutsideWorkspace",
        format!(
            "{path:?} is inside {CONTROL_DIR}/, lackpy's own config and traces; programs may not write there"
        ),
    )
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW | extra)`: never follows a
/// symlink, so it only inspects `dir` or a name in it; the errno on failure.
fn fstatat_nofollow(dir: RawFd, name: &CString, extra: libc::c_int) -> Result<libc::stat, i32> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstatat writes one stat struct into `st`; `name` is a valid C string.
    let rc = unsafe {
        libc::fstatat(
            dir,
            name.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW | extra,
        )
    };
    if rc != 0 {
        return Err(errno());
    }
    // SAFETY: fstatat succeeded, so it initialised `st`.
    Ok(unsafe { st.assume_init() })
}

/// (dev, ino) of the open file `fd`; `None` when it cannot be inspected.
pub(super) fn fd_id(fd: RawFd) -> Option<(u64, u64)> {
    fstat(fd).ok().map(|st| (st.st_dev, st.st_ino))
}

/// (dev, ino) of the directory `name` inside `dir` (not following symlinks).
fn dir_id(dir: RawFd, name: &CString) -> Option<(u64, u64)> {
    let st = fstatat_nofollow(dir, name, libc::AT_EMPTY_PATH).ok()?;
    Some((st.st_dev, st.st_ino))
}

/// Refuse when `dir` is the workspace's control directory or a git
/// directory (any `.git`, at any depth), or lies below one, however the
/// path reached it (symlinks inside the workspace included): walk `..` from
/// `dir` up to the workspace root comparing inodes.
fn refuse_inside_control_dir(ws: &Workspace, dir: &OwnedFd, path: &str) -> Result<(), ToolFailure> {
    let empty = cstr("")?;
    let Some(root) = dir_id(ws.fd(), &empty) else {
        return Err(ToolFailure::new("ToolFailed", "cannot stat the workspace"));
    };
    let control = dir_id(ws.fd(), &cstr(CONTROL_DIR)?);
    let git = cstr(GIT_DIR)?;
    let dotdot = cstr("..")?;
    let mut cur: Option<OwnedFd> = None;
    // Bounded: a path of at most PATH_CAP bytes cannot be deeper than this.
    for _ in 0..=PATH_CAP {
        let fd = cur.as_ref().map_or(dir.as_raw_fd(), |f| f.as_raw_fd());
        let Some(id) = dir_id(fd, &empty) else {
            return Err(ToolFailure::new(
                "ToolFailed",
                format!("cannot stat a parent of {path:?}"),
            ));
        };
        if Some(id) == control {
            return Err(control_dir_refusal(path));
        }
        if id == root {
            return Ok(());
        }
        // SAFETY: `..` of an open directory descriptor; O_PATH opens nothing for I/O.
        let up = unsafe {
            libc::openat(
                fd,
                dotdot.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
            )
        };
        if up < 0 {
            return Err(ToolFailure::new(
                "ToolFailed",
                format!("cannot walk up from {path:?}"),
            ));
        }
        // SAFETY: `up` is a fresh descriptor we own.
        let up = unsafe { OwnedFd::from_raw_fd(up) };
        // `cur` is its parent's `.git`: a repository's hooks and config,
        // which git runs and obeys outside any jail.
        if dir_id(up.as_raw_fd(), &git) == Some(id) {
            return Err(git_dir_refusal(path));
        }
        if dir_id(up.as_raw_fd(), &empty) == Some(id) {
            // Reached `/` without meeting the workspace: not beneath it.
            return Err(ToolFailure::new(
                "PathOutsideWorkspace",
                format!("{path:?} resolves outside the workspace"),
            ));
        }
        cur = Some(up);
    }
    Err(ToolFailure::new(
        "BadArgument",
        format!("path too deep: {path:?}"),
    ))
}

/// Most symlinks followed while resolving one write target (Linux's own
/// limit for a path walk, `ELOOP` beyond).
const SYMLINK_HOPS: usize = 40;

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: `None` when it does not exist.
fn lstat_at(dir: RawFd, name: &CString, path: &str) -> Result<Option<libc::stat>, ToolFailure> {
    match fstatat_nofollow(dir, name, 0) {
        Ok(st) => Ok(Some(st)),
        Err(libc::ENOENT) => Ok(None),
        Err(e) => Err(resolve_error(path, e)),
    }
}

/// The target of the symlink `name` in `dir` (at most `PATH_CAP` bytes).
fn readlink_at(dir: RawFd, name: &CString, path: &str) -> Result<Vec<u8>, ToolFailure> {
    let mut buf = vec![0u8; PATH_CAP + 1];
    // SAFETY: readlinkat writes at most `buf.len()` bytes into `buf`.
    let n = unsafe {
        libc::readlinkat(
            dir,
            name.as_ptr(),
            buf.as_mut_ptr().cast::<libc::c_char>(),
            buf.len(),
        )
    };
    let n = usize::try_from(n).map_err(|_| resolve_error(path, errno()))?;
    if n > PATH_CAP {
        return Err(ToolFailure::new(
            "BadArgument",
            format!("{path:?} is a symlink with a target longer than {PATH_CAP} bytes"),
        ));
    }
    buf.truncate(n);
    Ok(buf)
}

fn link_leaves(path: &str, why: &str) -> ToolFailure {
    ToolFailure::new(
        "PathOutsideWorkspace",
        format!(
            "{path:?} is a symlink that leaves the workspace ({why}); \
             the link was left unchanged"
        ),
    )
}

/// Where a write to `comps/name` lands when `name` is a symlink: follow it
/// (and any chain of links) one component at a time, as the kernel would,
/// beneath the workspace — the way CPython's `open(path, "w")` writes
/// through a link. Returns the directory (opened beneath the workspace) and
/// the plain name of the file to replace or create in it.
///
/// A link that leaves the workspace — an absolute target (refused as
/// `RESOLVE_BENEATH` refuses it for reads, even one naming a place inside),
/// `..` above the root — is `PathOutsideWorkspace`, and the link is never
/// touched. A target that is a directory is `IsADirectory`; more than
/// [`SYMLINK_HOPS`] links (a loop) is `PathOutsideWorkspace` as for reads.
fn resolve_link_target(
    ws: &Workspace,
    comps: &[&str],
    name: &str,
    path: &str,
) -> Result<(OwnedFd, CString), ToolFailure> {
    use std::collections::VecDeque;
    use std::os::unix::ffi::OsStrExt;
    let mut todo: VecDeque<Vec<u8>> = comps
        .iter()
        .chain(std::iter::once(&name))
        .map(|c| c.as_bytes().to_vec())
        .collect();
    // The directories walked so far, each a plain name (never a symlink)
    // beneath the workspace root.
    let mut stack: Vec<Vec<u8>> = Vec::new();
    let mut hops = 0usize;
    let open_dir = |stack: &[Vec<u8>]| -> Result<OwnedFd, ToolFailure> {
        let rel = if stack.is_empty() {
            b".".to_vec()
        } else {
            stack.join(&b'/')
        };
        let c = CString::new(rel)
            .map_err(|_| ToolFailure::new("BadArgument", "path contains a NUL byte"))?;
        openat2(ws.fd(), &c, libc::O_PATH | libc::O_DIRECTORY, 0)
            .map_err(|e| resolve_error(path, e))
    };
    while let Some(comp) = todo.pop_front() {
        match comp.as_slice() {
            b"" | b"." => continue,
            b".." => {
                if stack.pop().is_none() {
                    return Err(link_leaves(path, "it climbs above the workspace root"));
                }
                continue;
            }
            _ => {}
        }
        let last = todo.iter().all(|c| c.is_empty() || c.as_slice() == b".");
        let dir = open_dir(&stack)?;
        let cname = CString::new(comp.clone())
            .map_err(|_| ToolFailure::new("BadArgument", "path contains a NUL byte"))?;
        let st = lstat_at(dir.as_raw_fd(), &cname, path)?;
        let fmt = st.map(|st| st.st_mode & libc::S_IFMT);
        match fmt {
            Some(libc::S_IFLNK) => {
                hops += 1;
                if hops > SYMLINK_HOPS {
                    return Err(ToolFailure::new(
                        "PathOutsideWorkspace",
                        format!("{path:?} goes through too many symlinks (a loop?)"),
                    ));
                }
                let target = readlink_at(dir.as_raw_fd(), &cname, path)?;
                if target.first() == Some(&b'/') {
                    return Err(link_leaves(
                        path,
                        &format!(
                            "it points to the absolute path {:?}",
                            std::ffi::OsStr::from_bytes(&target)
                        ),
                    ));
                }
                for c in target.split(|b| *b == b'/').rev() {
                    todo.push_front(c.to_vec());
                }
            }
            Some(libc::S_IFDIR) if !last => stack.push(comp),
            Some(libc::S_IFDIR) => {
                return Err(ToolFailure::new(
                    "IsADirectory",
                    format!("{path:?} is a symlink to a directory"),
                ))
            }
            None if !last => {
                return Err(ToolFailure::new(
                    "FileNotFound",
                    format!("{path:?} is a symlink into a directory that does not exist"),
                ))
            }
            Some(_) if !last => {
                return Err(ToolFailure::new(
                    "FileNotFound",
                    format!("{path:?} is a symlink through something that is not a directory"),
                ))
            }
            // The file to replace, or to create (a dangling link inside).
            _ => return Ok((dir, cname)),
        }
    }
    // The walk ended on a directory (a link to `.` or `sub/..`).
    Err(ToolFailure::new(
        "IsADirectory",
        format!("{path:?} is a symlink to a directory"),
    ))
}

/// Write `content` to `path` atomically: a temp file in the same directory,
/// fsync, then `renameat` over the target (a killed run never leaves a torn file).
///
/// When `path` names a symlink, the write goes through it to its target, as
/// CPython's `open(path, "w")` does, and the link itself is left as it was —
/// but only when the target resolves beneath the workspace (see
/// `resolve_link_target`); a link that leaves it is refused with
/// `PathOutsideWorkspace`, never replaced. The temp file is then made in
/// the target's directory.
///
/// # Errors
/// As [`read_text`], plus `TooLarge` for oversized content.
pub fn write_text(ws: &Workspace, path: &str, content: &str) -> Result<(), ToolFailure> {
    write_text_within(ws, path, content, &RunContext::default())
}

/// [`write_text`] within run `run`'s write budget
/// ([`RunContext::charge_write`]): each directory it creates is charged as
/// it is made, the content (in whole blocks) just before the file is
/// written; a charge past the budget fails the call with nothing more
/// written.
///
/// # Errors
/// As [`write_text`], plus `TooLarge` past the run's write budget.
pub fn write_text_within(
    ws: &Workspace,
    path: &str,
    content: &str,
    run: &RunContext,
) -> Result<(), ToolFailure> {
    check_path(path)?;
    if content.len() > WRITE_CAP {
        return Err(ToolFailure::new(
            "TooLarge",
            format!(
                "content is {} bytes; the limit is {WRITE_CAP}",
                content.len()
            ),
        ));
    }
    let (comps, name) = split_parent(path)?;
    // `.lackpy/` holds config, kits, templates and traces that later runs
    // trust: a program must never write there (it could grant itself tools).
    if comps.first().copied().unwrap_or(name) == CONTROL_DIR {
        return Err(control_dir_refusal(path));
    }
    // A repository's `.git` (hooks, `core.fsmonitor`, a `.git` file naming
    // another git dir) is code git runs on the user's next `git status`.
    if name == GIT_DIR || comps.contains(&GIT_DIR) {
        return Err(git_dir_refusal(path));
    }
    let mut dir = open_parent(ws, &comps, run, path)?;
    refuse_inside_control_dir(ws, &dir, path)?;
    let mut cname = cstr(name)?;
    let mut existing = lstat_at(dir.as_raw_fd(), &cname, path)?;
    if existing.is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK) {
        // Write through the link to its target beneath the workspace (the
        // link stays); a link out is refused before anything is written.
        (dir, cname) = resolve_link_target(ws, &comps, name, path)?;
        refuse_inside_control_dir(ws, &dir, path)?;
        refuse_protected_entry(ws, &dir, cname.as_bytes(), path)?;
        existing = lstat_at(dir.as_raw_fd(), &cname, path)?;
        if existing.is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK) {
            // Only a concurrent change of the workspace gets here.
            return Err(ToolFailure::new(
                "ToolFailed",
                format!("{path:?}: the symlink's target changed while writing"),
            ));
        }
    }
    let mut mode = 0o644;
    if let Some(st) = existing {
        if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
            return Err(ToolFailure::new(
                "IsADirectory",
                format!("{path:?} is a directory"),
            ));
        }
        if st.st_mode & libc::S_IFMT == libc::S_IFREG {
            mode = st.st_mode & 0o777;
        }
    }
    if cname.as_bytes() == b"HEAD" && is_git_head(content) {
        return Err(git_head_refusal(path));
    }
    run.charge_write(
        WriteBudget::file_cost(content.len() as u64),
        &format!("writing {} bytes to {}", content.len(), brief(path)),
    )?;
    let name = cname.to_str().unwrap_or(name);
    let tmp = cstr(&next_tmp_name(name))?;
    let fd = openat2(
        dir.as_raw_fd(),
        &tmp,
        libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
        mode,
    )
    .map_err(|e| resolve_error(path, e))?;
    let cleanup = |e: ToolFailure| {
        // SAFETY: unlinking our own temp name inside `dir`.
        unsafe { libc::unlinkat(dir.as_raw_fd(), tmp.as_ptr(), 0) };
        e
    };
    let mut file = std::fs::File::from(fd);
    use std::io::Write;
    file.write_all(content.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| cleanup(resolve_error(path, e.raw_os_error().unwrap_or(libc::EIO))))?;
    drop(file);
    // SAFETY: both names are NUL-terminated plain names inside `dir`.
    let rc = unsafe {
        libc::renameat(
            dir.as_raw_fd(),
            tmp.as_ptr(),
            dir.as_raw_fd(),
            cname.as_ptr(),
        )
    };
    if rc != 0 {
        return Err(cleanup(resolve_error(path, errno())));
    }
    // Make the rename itself durable.
    // SAFETY: fsync on an O_PATH fd fails harmlessly with EBADF; open the dir for it.
    let dfd = openat2(
        dir.as_raw_fd(),
        &cstr(".")?,
        libc::O_RDONLY | libc::O_DIRECTORY,
        0,
    );
    if let Ok(d) = dfd {
        // SAFETY: fsync on our own descriptor.
        unsafe { libc::fsync(d.as_raw_fd()) };
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::undocumented_unsafe_blocks)]
mod tests {
    use super::*;
    use std::os::unix::fs::OpenOptionsExt;

    fn ws() -> (tempfile::TempDir, Workspace) {
        let d = tempfile::tempdir().unwrap();
        let w = Workspace::open(d.path()).unwrap();
        (d, w)
    }

    /// Each directory a write creates and its content (whole blocks) are
    /// charged to the run's budget before they are made; a write past it
    /// is refused with the file not written.
    #[test]
    fn writes_are_charged_to_the_runs_budget() {
        use crate::call::WriteBudget;
        use std::sync::Arc;
        let (d, w) = ws();
        let budget = Arc::new(WriteBudget::new(6 * WRITE_BLOCK));
        let run = RunContext::default().with_writes(Arc::clone(&budget));
        write_text_within(&w, "a/b/c.txt", "x", &run).unwrap();
        assert_eq!(budget.used(), 3 * WRITE_BLOCK);
        let big = "y".repeat(WRITE_BLOCK as usize + 1);
        write_text_within(&w, "a/b/d.txt", &big, &run).unwrap();
        assert_eq!(budget.used(), 5 * WRITE_BLOCK);
        let e = write_text_within(&w, "a/e.txt", &big, &run).unwrap_err();
        assert_eq!(e.type_name, "TooLarge");
        assert!(e.message.contains("write_bytes"), "{}", e.message);
        assert!(!d.path().join("a/e.txt").exists());
        // The directory fits (the sixth block), its empty file does not.
        let e = write_text_within(&w, "n/f.txt", "", &run).unwrap_err();
        assert!(e.message.contains("writing 0 bytes"), "{}", e.message);
        assert_eq!(budget.used(), 6 * WRITE_BLOCK);
        assert!(d.path().join("n").is_dir() && !d.path().join("n/f.txt").exists());
        let e = write_text_within(&w, "m/f.txt", "", &run).unwrap_err();
        assert!(e.message.contains("creating a directory"), "{}", e.message);
        assert!(budget.exceeded());
        assert!(!d.path().join("m").exists());
    }

    #[test]
    fn writes_never_reach_the_control_dir() {
        let (d, w) = ws();
        std::fs::create_dir_all(d.path().join(".lackpy/kits")).unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::os::unix::fs::symlink(".lackpy", d.path().join("cfg")).unwrap();
        std::os::unix::fs::symlink("../.lackpy/kits", d.path().join("sub/k")).unwrap();
        for p in [
            ".lackpy/config.toml",
            "./.lackpy/config.toml",
            "sub/../.lackpy/config.toml",
            ".lackpy/kits/x.kit",
            ".lackpy",
            "cfg/config.toml",
            "sub/k/evil.kit",
        ] {
            let e = write_text(&w, p, "x").unwrap_err();
            assert_eq!(e.type_name, "PathOutsideWorkspace", "{p}: {e:?}");
            assert!(e.message.contains(".lackpy/"), "{p}: {}", e.message);
        }
        assert!(!d.path().join(".lackpy/config.toml").exists());
        assert!(!d.path().join(".lackpy/kits/evil.kit").exists());
        // A directory merely named .lackpy deeper down is ordinary data.
        write_text(&w, "sub/.lackpy/notes.txt", "ok").unwrap();
        write_text(&w, "sub/a.txt", "ok").unwrap();
        // Without a control directory, creating one is refused too.
        let (d2, w2) = ws();
        assert!(write_text(&w2, ".lackpy/config.toml", "x").is_err());
        assert!(!d2.path().join(".lackpy").exists());
    }

    /// A repository's `.git` (hooks, config, a `.git` file naming another
    /// git dir) is never written, at any depth and through any symlink;
    /// names that merely contain `.git` are ordinary files.
    #[test]
    fn writes_never_reach_a_git_dir() {
        let (d, w) = ws();
        std::fs::create_dir_all(d.path().join(".git/hooks")).unwrap();
        std::fs::create_dir_all(d.path().join("vendor/lib/.git")).unwrap();
        std::os::unix::fs::symlink(".git", d.path().join("g")).unwrap();
        std::os::unix::fs::symlink(".git/hooks", d.path().join("h")).unwrap();
        std::os::unix::fs::symlink(".git/hooks/pre-commit", d.path().join("pc")).unwrap();
        std::os::unix::fs::symlink("vendor/lib/.git", d.path().join("v")).unwrap();
        std::os::unix::fs::symlink("sub", d.path().join("s")).unwrap();
        std::fs::create_dir_all(d.path().join("sub")).unwrap();
        for p in [
            ".git/hooks/pre-commit",
            ".git/config",
            "./.git/config",
            "a/../.git/config",
            "g/config",
            "g/hooks/post-checkout",
            "h/pre-commit",
            "h/new/dir/x",
            "v/config",
            "vendor/lib/.git/config",
            "sub/.git",
            "s/.git/config",
            ".git",
        ] {
            let e = write_text(&w, p, "x").unwrap_err();
            assert_eq!(e.type_name, "PathOutsideWorkspace", "{p}: {}", e.message);
            assert!(e.message.contains(".git"), "{p}: {}", e.message);
        }
        // A symlink whose target is named `.git`.
        std::os::unix::fs::symlink(".git", d.path().join("sub/link")).unwrap();
        assert!(write_text(&w, "sub/link", "gitdir: /tmp/evil").is_err());
        let hooks: Vec<_> = std::fs::read_dir(d.path().join(".git/hooks"))
            .unwrap()
            .collect();
        assert!(hooks.is_empty(), "{hooks:?}");
        assert!(!d.path().join(".git/config").exists());
        assert!(!d.path().join("sub/.git").exists());
        assert!(!d.path().join("vendor/lib/.git/config").exists());
        // Names that only look alike are ordinary data.
        for p in [".gitignore", "docs/.github/x.yml", "a.git/x", ".git2/x"] {
            write_text(&w, p, "ok").unwrap();
        }
        // Dangling: a link into .git whose target does not exist yet.
        let e = write_text(&w, "pc", "x").unwrap_err();
        assert!(e.message.contains(".git"), "{}", e.message);
        assert!(!d.path().join(".git/hooks/pre-commit").exists());
    }

    /// A symlink inside the workspace to `.lackpy/` (or to the root while
    /// `.lackpy` is absent) must not let a write create directories there
    /// (`mkdir -p` of the missing parents ran before the control-directory
    /// check, so `cfg/traces/<day>.jsonl/x` left a directory where the next
    /// trace file goes, and `cfg/config.toml/x` one where the config goes).
    #[test]
    fn missing_parents_are_never_created_in_the_control_dir() {
        let (d, w) = ws();
        std::fs::create_dir_all(d.path().join(".lackpy/traces")).unwrap();
        std::os::unix::fs::symlink(".lackpy", d.path().join("cfg")).unwrap();
        std::os::unix::fs::symlink(".lackpy/traces", d.path().join("tr")).unwrap();
        for p in [
            "cfg/config.toml/x",
            "cfg/kits/evil.kit/x",
            "cfg/traces/2026-01-01.jsonl/x",
            "tr/2026-01-01.jsonl/x",
            "cfg/a/b/c/d.txt",
        ] {
            let e = write_text(&w, p, "x").unwrap_err();
            assert_eq!(e.type_name, "PathOutsideWorkspace", "{p}: {e:?}");
        }
        let mut left: Vec<_> = std::fs::read_dir(d.path().join(".lackpy"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        left.sort();
        assert_eq!(left, ["traces"]);
        assert_eq!(
            std::fs::read_dir(d.path().join(".lackpy/traces"))
                .unwrap()
                .count(),
            0
        );
        // Without `.lackpy`, a link to the root must not create it.
        let (d2, w2) = ws();
        std::os::unix::fs::symlink(".", d2.path().join("root")).unwrap();
        let e = write_text(&w2, "root/.lackpy/config.toml", "x").unwrap_err();
        assert_eq!(e.type_name, "PathOutsideWorkspace", "{e:?}");
        assert!(!d2.path().join(".lackpy").exists());
        // Ordinary parents are still created, through links that stay inside.
        std::fs::create_dir(d2.path().join("sub")).unwrap();
        std::os::unix::fs::symlink("sub", d2.path().join("in")).unwrap();
        write_text(&w2, "in/new/deep/f.txt", "ok").unwrap();
        assert_eq!(
            std::fs::read_to_string(d2.path().join("sub/new/deep/f.txt")).unwrap(),
            "ok"
        );
    }

    /// Reads of the control directory are refused whatever is there (or
    /// not): by name first, then by the opened file's kernel name.
    #[test]
    fn reads_never_reach_the_control_dir() {
        let (d, w) = ws();
        std::fs::create_dir_all(d.path().join(".lackpy/traces")).unwrap();
        std::fs::write(d.path().join(".lackpy/config.toml"), "secret").unwrap();
        std::os::unix::fs::symlink(".lackpy", d.path().join("cfg")).unwrap();
        std::os::unix::fs::symlink(".lackpy/config.toml", d.path().join("c")).unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        for p in [
            ".lackpy",
            ".lackpy/config.toml",
            ".lackpy/missing",
            "sub/../.lackpy/missing",
            "./.lackpy/traces",
            "sub/../.lackpy/config.toml",
            "cfg/config.toml",
            "c",
        ] {
            let e = read_text(&w, p).unwrap_err();
            assert_eq!(e.type_name, "PathOutsideWorkspace", "{p}: {e:?}");
        }
        std::fs::write(d.path().join("sub/.lackpy"), "data").unwrap();
        assert_eq!(read_text(&w, "sub/.lackpy").unwrap(), "data");
    }

    #[test]
    fn reads_and_confines() {
        let (d, w) = ws();
        std::fs::write(d.path().join("a.txt"), "héllo\r\n").unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("bin"), [0xff, 0xfe]).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", d.path().join("abs_link")).unwrap();
        std::os::unix::fs::symlink("../../../../etc/passwd", d.path().join("rel_link")).unwrap();
        std::os::unix::fs::symlink("a.txt", d.path().join("ok_link")).unwrap();
        std::os::unix::fs::symlink("/proc/self/root", d.path().join("proc_link")).unwrap();
        assert_eq!(read_text(&w, "a.txt").unwrap(), "héllo\r\n");
        assert_eq!(read_text(&w, "sub/../a.txt").unwrap(), "héllo\r\n");
        assert_eq!(read_text(&w, "./ok_link").unwrap(), "héllo\r\n");
        let t = |p: &str| read_text(&w, p).unwrap_err().type_name;
        assert_eq!(t("../a.txt"), "PathOutsideWorkspace");
        assert_eq!(t("/etc/passwd"), "PathOutsideWorkspace");
        assert_eq!(t("abs_link"), "PathOutsideWorkspace");
        assert_eq!(t("rel_link"), "PathOutsideWorkspace");
        assert_eq!(t("proc_link/etc/passwd"), "PathOutsideWorkspace");
        assert_eq!(t("sub/../../x"), "PathOutsideWorkspace");
        assert_eq!(t("missing"), "FileNotFound");
        assert_eq!(t("sub"), "IsADirectory");
        assert_eq!(t("bin"), "NotUtf8");
        assert_eq!(t("a\0b"), "BadArgument");
        assert_eq!(t(""), "BadArgument");
        assert_eq!(t(&"a/".repeat(3000)), "BadArgument");
    }

    #[test]
    fn git_heads_are_recognised_as_git_does() {
        assert!(is_git_head("ref: refs/heads/main\n"));
        assert!(is_git_head("ref:refs/x"));
        assert!(is_git_head("ref: \t refs/heads/x"));
        assert!(is_git_head(&"aB".repeat(20)));
        assert!(is_git_head(&format!("{}\n", "0".repeat(64))));
        assert!(!is_git_head("ref: heads/main"));
        assert!(!is_git_head(" ref: refs/heads/main"));
        assert!(!is_git_head(&"0".repeat(39)));
        assert!(!is_git_head("plain text"));
        assert!(!is_git_head(""));
    }

    #[test]
    fn fifo_does_not_hang() {
        let (d, w) = ws();
        let p = d.path().join("fifo");
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        assert_eq!(read_text(&w, "fifo").unwrap_err().type_name, "BadArgument");
    }

    /// Nothing but a regular file is ever opened for I/O: a writer waiting
    /// on a FIFO (an open for reading would wake it and hand it a reader)
    /// is still waiting after `read_text` and code intelligence met it.
    #[test]
    fn non_regular_files_are_never_opened() {
        let (d, w) = ws();
        let fifo = d.path().join("f.py");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let fifo2 = fifo.clone();
        std::thread::spawn(move || {
            // Blocks until somebody opens the FIFO for reading.
            let r = std::fs::OpenOptions::new().write(true).open(&fifo2);
            let _ = tx.send(r.is_ok());
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert_eq!(read_text(&w, "f.py").unwrap_err().type_name, "BadArgument");
        let c = CString::new("f.py").unwrap();
        assert_eq!(
            open_regular(w.fd(), &c, libc::O_NOFOLLOW).unwrap_err(),
            libc::EINVAL
        );
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(300))
                .is_err(),
            "the FIFO was opened for reading"
        );
        // Release the writer.
        let _r = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        assert_eq!(rx.recv_timeout(std::time::Duration::from_secs(5)), Ok(true));
    }

    #[test]
    fn too_large() {
        let (d, w) = ws();
        let f = std::fs::File::create(d.path().join("big")).unwrap();
        f.set_len(READ_CAP + 1).unwrap();
        assert_eq!(read_text(&w, "big").unwrap_err().type_name, "TooLarge");
        assert_eq!(
            write_text(&w, "x", &"a".repeat(WRITE_CAP + 1))
                .unwrap_err()
                .type_name,
            "TooLarge"
        );
    }

    #[test]
    fn writes_atomically_and_creates_parents() {
        let (d, w) = ws();
        write_text(&w, "new/deep/f.txt", "one").unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("new/deep/f.txt")).unwrap(),
            "one"
        );
        write_text(&w, "new/deep/../f2.txt", "two").unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("new/f2.txt")).unwrap(),
            "two"
        );
        write_text(&w, "new/deep/f.txt", "three").unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("new/deep/f.txt")).unwrap(),
            "three"
        );
        // No temp files left behind.
        let names: Vec<_> = std::fs::read_dir(d.path().join("new/deep"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        for (p, refusal) in [
            ("../escape.txt", "PathOutsideWorkspace"),
            ("/tmp/escape.txt", "PathOutsideWorkspace"),
            ("new", "IsADirectory"),
            (".", "IsADirectory"),
        ] {
            let e = write_text(&w, p, "x").unwrap_err();
            assert_eq!(e.type_name, refusal, "{p:?}");
        }
    }

    #[test]
    fn write_through_symlinked_dir_out_is_refused() {
        let (d, w) = ws();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("out")).unwrap();
        assert_eq!(
            write_text(&w, "out/x.txt", "x").unwrap_err().type_name,
            "PathOutsideWorkspace"
        );
        assert_eq!(
            write_text(&w, "out/new/x.txt", "x").unwrap_err().type_name,
            "PathOutsideWorkspace"
        );
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
        // A symlink to a file outside is refused; the link and its target stay.
        let target = outside.path().join("victim");
        std::fs::write(&target, "safe").unwrap();
        std::os::unix::fs::symlink(&target, d.path().join("victim_link")).unwrap();
        let e = write_text(&w, "victim_link", "x").unwrap_err();
        assert_eq!(e.type_name, "PathOutsideWorkspace");
        assert!(
            e.message.contains("symlink that leaves the workspace"),
            "{}",
            e.message
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "safe");
        assert_eq!(
            std::fs::read_link(d.path().join("victim_link")).unwrap(),
            target
        );
    }

    /// Every kind of symlink a program may name as the file to write:
    /// links out are refused and left as they were; links that stay inside
    /// are written through (the link stays a link).
    #[test]
    fn writes_through_symlinks_only_beneath_the_workspace() {
        use std::os::unix::fs::symlink;
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("ws");
        std::fs::create_dir_all(root.join("sub/deep")).unwrap();
        let canary = top.path().join("canary.txt");
        std::fs::write(&canary, "CANARY").unwrap();
        std::fs::write(root.join("a.txt"), "hello").unwrap();
        std::fs::write(root.join("sub/b.txt"), "inside").unwrap();
        let links: &[(&str, &str)] = &[
            ("link_canary", canary.to_str().unwrap()),
            ("link_canary_rel", "../canary.txt"),
            ("link_root", "/"),
            ("link_up", ".."),
            ("link_proc", "/proc/self/environ"),
            ("link_loop", "link_loop"),
            ("link_in", "sub"),
            ("sub/link_up2", "../../canary.txt"),
            ("sub/deep/link_up3", "../../../canary.txt"),
            ("link_chain_out", "sub/link_up2"),
            ("link_abs_inside", "/nonexistent-but-absolute"),
            ("link_a", "a.txt"),
            ("sub/link_b_up", "../a.txt"),
            ("link_chain_in", "sub/link_b_up"),
            ("link_new", "sub/new.txt"),
            ("link_new_missing_dir", "nodir/new.txt"),
            ("link_dot", "."),
            ("link_via_in", "link_in/b.txt"),
            ("link_ctl", ".lackpy"),
        ];
        for (name, target) in links {
            symlink(target, root.join(name)).unwrap();
        }
        let w = Workspace::open(&root).unwrap();
        let err = |p: &str| write_text(&w, p, "x").unwrap_err();
        for p in [
            "link_canary",
            "link_canary_rel",
            "sub/link_up2",
            "sub/deep/link_up3",
            "link_chain_out",
            "link_abs_inside",
            "link_proc",
        ] {
            let e = err(p);
            assert_eq!(e.type_name, "PathOutsideWorkspace", "{p}: {e:?}");
            assert!(
                e.message.contains("symlink that leaves the workspace"),
                "{p}: {}",
                e.message
            );
        }
        assert_eq!(err("link_up").type_name, "PathOutsideWorkspace");
        assert_eq!(err("link_loop").type_name, "PathOutsideWorkspace");
        assert!(err("link_loop").message.contains("too many symlinks"));
        assert_eq!(err("link_root").type_name, "PathOutsideWorkspace");
        assert_eq!(err("link_in").type_name, "IsADirectory");
        assert_eq!(err("link_dot").type_name, "IsADirectory");
        assert_eq!(err("link_new_missing_dir").type_name, "FileNotFound");
        // A dangling link to `.lackpy` would create the control directory's name.
        assert_eq!(err("link_ctl").type_name, "PathOutsideWorkspace");
        // Nothing outside changed; every link is still the same link.
        assert_eq!(std::fs::read_to_string(&canary).unwrap(), "CANARY");
        for (name, target) in links {
            assert_eq!(
                std::fs::read_link(root.join(name)).unwrap(),
                std::path::PathBuf::from(target),
                "{name}"
            );
        }
        // Links that stay inside are written through, atomically; a dangling
        // link inside creates its target (as open(path, "w") does).
        for (link, file, text) in [
            ("link_a", "a.txt", "via link"),
            ("link_chain_in", "a.txt", "chained"),
            ("link_via_in", "sub/b.txt", "through a dir link"),
            ("link_new", "sub/new.txt", "created"),
        ] {
            write_text(&w, link, text).unwrap();
            let written = std::fs::read_to_string(root.join(file)).unwrap();
            assert_eq!(written, text, "{link}");
        }
        for (name, target) in links {
            assert_eq!(
                std::fs::read_link(root.join(name)).unwrap(),
                std::path::PathBuf::from(target),
                "{name}"
            );
        }
        // No temp files left anywhere.
        for dir in [root.clone(), root.join("sub")] {
            for e in std::fs::read_dir(dir).unwrap() {
                let n = e.unwrap().file_name();
                assert!(!n.to_string_lossy().ends_with(".tmp"), "{n:?}");
            }
        }
        assert!(!root.join(".lackpy").exists());
    }

    #[test]
    fn reads_whole_files_of_every_size_and_files_that_grew() {
        let (d, w) = ws();
        for n in [0usize, 1, 12, 4095, 4096, 65_535, 65_536, 65_537, 300_000] {
            let text: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            std::fs::write(d.path().join("f.txt"), &text).unwrap();
            assert_eq!(read_text(&w, "f.txt").unwrap(), text, "size {n}");
        }
        // A file longer than the size fstat gave (it grew): read to its end.
        std::fs::write(d.path().join("g.txt"), "0123456789").unwrap();
        let mut f = std::fs::File::open(d.path().join("g.txt")).unwrap();
        assert_eq!(read_capped(&mut f, 3).unwrap(), b"0123456789");
        let mut f = std::fs::File::open(d.path().join("g.txt")).unwrap();
        assert_eq!(read_capped(&mut f, 100_000).unwrap(), b"0123456789");
    }
}
