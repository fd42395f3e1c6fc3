//! Workspace-confined file access.
//!
//! Every path a program gives is resolved by the kernel *beneath* the
//! workspace directory's descriptor: `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_MAGICLINKS)`. `..` that stays inside works; `..` that leaves,
//! absolute paths, symlinks pointing out (absolute or relative) and
//! `/proc` magic links all fail with `EXDEV`/`ELOOP`, reported as
//! `PathOutsideWorkspace`. Nothing here ever opens a path by name from the
//! process's root or cwd.

use lackpy_policy::wire::ToolFailure;
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

/// A tool failure with the given type.
pub fn fail(type_name: &str, message: impl Into<String>) -> ToolFailure {
    ToolFailure {
        type_name: type_name.to_string(),
        message: message.into(),
    }
}

/// An open workspace directory.
#[derive(Debug)]
pub struct Workspace {
    dir: OwnedFd,
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
        Ok(Workspace { dir })
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
        return Err(fail("BadArgument", "path is empty"));
    }
    if path.len() > PATH_CAP {
        return Err(fail(
            "BadArgument",
            format!("path is longer than {PATH_CAP} bytes"),
        ));
    }
    if path.starts_with('/') {
        return Err(fail(
            "PathOutsideWorkspace",
            format!("{path:?} is absolute; paths are relative to the workspace"),
        ));
    }
    CString::new(path).map_err(|_| fail("BadArgument", "path contains a NUL byte"))
}

/// Map an errno from resolving `path` to the tool error the contract names.
pub fn resolve_error(path: &str, e: i32) -> ToolFailure {
    match e {
        libc::EXDEV => fail(
            "PathOutsideWorkspace",
            format!("{path:?} resolves outside the workspace"),
        ),
        libc::ELOOP => fail(
            "PathOutsideWorkspace",
            format!("{path:?} goes through a /proc magic link or too many symlinks"),
        ),
        libc::ENOENT => fail("FileNotFound", format!("no such file: {path:?}")),
        libc::ENOTDIR => fail(
            "FileNotFound",
            format!("no such file: {path:?} (a parent is not a directory)"),
        ),
        libc::EISDIR => fail("IsADirectory", format!("{path:?} is a directory")),
        libc::EACCES | libc::EPERM => fail("ToolFailed", format!("permission denied: {path:?}")),
        libc::ENAMETOOLONG => fail("BadArgument", format!("path too long: {path:?}")),
        libc::EROFS => fail("ToolFailed", format!("read-only file system: {path:?}")),
        libc::ENOSPC | libc::EDQUOT => {
            fail("ToolFailed", format!("no space left writing {path:?}"))
        }
        _ => fail(
            "ToolFailed",
            format!("{path:?}: {}", std::io::Error::from_raw_os_error(e)),
        ),
    }
}

/// The kernel's `struct open_how` (libc's is non-exhaustive).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// `openat2(dir, path, flags, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`.
///
/// # Errors
/// The raw errno.
pub fn openat2(dir: RawFd, path: &CString, flags: i32, mode: u32) -> Result<OwnedFd, i32> {
    let how = OpenHow {
        // openat2 rejects O_PATH combined with anything but O_DIRECTORY/O_NOFOLLOW/O_CLOEXEC.
        flags: (flags
            | libc::O_CLOEXEC
            | if flags & libc::O_PATH == 0 {
                libc::O_NOCTTY
            } else {
                0
            }) as u64,
        mode: if flags & libc::O_CREAT != 0 {
            u64::from(mode)
        } else {
            0
        },
        resolve: RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    loop {
        // SAFETY: `path` is NUL-terminated; `how` is a valid open_how of the size passed.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir,
                path.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>(),
            )
        };
        if fd >= 0 {
            let fd = RawFd::try_from(fd).map_err(|_| libc::EBADF)?;
            // SAFETY: fresh descriptor owned by nobody else.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let e = errno();
        if e != libc::EINTR && e != libc::EAGAIN {
            return Err(e);
        }
    }
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
    // O_NONBLOCK: a FIFO planted in the workspace must not hang the supervisor.
    let fd = openat2(ws.fd(), &c, libc::O_RDONLY | libc::O_NONBLOCK, 0)
        .map_err(|e| resolve_error(path, e))?;
    let st = fstat(fd.as_raw_fd()).map_err(|e| resolve_error(path, e))?;
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => {}
        libc::S_IFDIR => return Err(fail("IsADirectory", format!("{path:?} is a directory"))),
        _ => {
            return Err(fail(
                "BadArgument",
                format!("{path:?} is not a regular file"),
            ))
        }
    }
    let size = u64::try_from(st.st_size).unwrap_or(0);
    if size > READ_CAP {
        return Err(fail(
            "TooLarge",
            format!("{path:?} is {size} bytes; the limit is {READ_CAP}"),
        ));
    }
    let mut file = std::fs::File::from(fd);
    let buf = read_capped(&mut file, size).map_err(|e| resolve_error(path, e))?;
    if buf.len() as u64 > READ_CAP {
        return Err(fail(
            "TooLarge",
            format!("{path:?} is larger than {READ_CAP} bytes"),
        ));
    }
    String::from_utf8(buf).map_err(|e| {
        fail(
            "NotUtf8",
            format!(
                "{path:?} is not valid UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
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

/// Split a relative path into (parent components, file name), lexically
/// resolving `.` and `..`; a `..` that climbs above the root is outside.
fn split_parent(path: &str) -> Result<(Vec<&str>, &str), ToolFailure> {
    let mut comps: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if comps.pop().is_none() {
                    return Err(fail(
                        "PathOutsideWorkspace",
                        format!("{path:?} climbs out of the workspace"),
                    ));
                }
            }
            c => comps.push(c),
        }
    }
    let name = comps.pop().ok_or_else(|| {
        fail(
            "IsADirectory",
            format!("{path:?} names the workspace itself"),
        )
    })?;
    if path.ends_with('/') {
        return Err(fail("IsADirectory", format!("{path:?} names a directory")));
    }
    Ok((comps, name))
}

fn cstr(s: &str) -> Result<CString, ToolFailure> {
    CString::new(s).map_err(|_| fail("BadArgument", "path contains a NUL byte"))
}

/// Open (creating as needed) the directory `comps` beneath the workspace.
fn open_parent(
    ws: &Workspace,
    comps: &[&str],
    create: bool,
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
        Err(libc::ENOENT) if create => {}
        Err(e) => return Err(resolve_error(path, e)),
    }
    // mkdir -p, one level at a time: each parent is resolved beneath the
    // workspace, and mkdirat only ever creates a plain name inside it.
    let mut dir = openat2(ws.fd(), &cstr(".")?, flags, 0).map_err(|e| resolve_error(path, e))?;
    for (i, comp) in comps.iter().enumerate() {
        let name = cstr(comp)?;
        // SAFETY: `name` is NUL-terminated; `dir` is an open directory descriptor.
        let rc = unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o755) };
        if rc != 0 && errno() != libc::EEXIST {
            return Err(resolve_error(path, errno()));
        }
        let sub = comps[..=i].join("/");
        dir = openat2(ws.fd(), &cstr(&sub)?, flags, 0).map_err(|e| resolve_error(path, e))?;
    }
    Ok(dir)
}

fn next_tmp_name(name: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(".{name}.lackpy-{}-{n}.tmp", std::process::id())
}

/// The workspace's control directory (config, kits, templates, traces).
pub const CONTROL_DIR: &str = ".lackpy";

fn control_dir_refusal(path: &str) -> ToolFailure {
    fail(
        "PathOutsideWorkspace",
        format!(
            "{path:?} is inside {CONTROL_DIR}/, lackpy's own config and traces; programs may not write there"
        ),
    )
}

/// (dev, ino) of the directory `name` inside `dir` (not following symlinks).
fn dir_id(dir: RawFd, name: &CString) -> Option<(u64, u64)> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstatat writes one stat struct; AT_SYMLINK_NOFOLLOW|AT_EMPTY_PATH only inspect `dir` or a name in it.
    let rc = unsafe {
        libc::fstatat(
            dir,
            name.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH,
        )
    };
    if rc != 0 {
        return None;
    }
    // SAFETY: fstatat succeeded.
    let st = unsafe { st.assume_init() };
    Some((st.st_dev, st.st_ino))
}

/// Refuse when `dir` is the workspace's control directory or lies below it,
/// however the path reached it (symlinks inside the workspace included):
/// walk `..` from `dir` up to the workspace root comparing inodes.
fn refuse_inside_control_dir(ws: &Workspace, dir: &OwnedFd, path: &str) -> Result<(), ToolFailure> {
    let empty = cstr("")?;
    let Some(root) = dir_id(ws.fd(), &empty) else {
        return Err(fail("ToolFailed", "cannot stat the workspace"));
    };
    let Some(control) = dir_id(ws.fd(), &cstr(CONTROL_DIR)?) else {
        return Ok(()); // no control directory: nothing to protect below
    };
    let dotdot = cstr("..")?;
    let mut cur: Option<OwnedFd> = None;
    // Bounded: a path of at most PATH_CAP bytes cannot be deeper than this.
    for _ in 0..=PATH_CAP {
        let fd = cur.as_ref().map_or(dir.as_raw_fd(), |f| f.as_raw_fd());
        let Some(id) = dir_id(fd, &empty) else {
            return Err(fail(
                "ToolFailed",
                format!("cannot stat a parent of {path:?}"),
            ));
        };
        if id == control {
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
            return Err(fail("ToolFailed", format!("cannot walk up from {path:?}")));
        }
        // SAFETY: `up` is a fresh descriptor we own.
        let up = unsafe { OwnedFd::from_raw_fd(up) };
        if dir_id(up.as_raw_fd(), &empty) == Some(id) {
            // Reached `/` without meeting the workspace: not beneath it.
            return Err(fail(
                "PathOutsideWorkspace",
                format!("{path:?} resolves outside the workspace"),
            ));
        }
        cur = Some(up);
    }
    Err(fail("BadArgument", format!("path too deep: {path:?}")))
}

/// Write `content` to `path` atomically: a temp file in the same directory,
/// fsync, then `renameat` over the target (a killed run never leaves a torn file).
///
/// # Errors
/// As [`read_text`], plus `TooLarge` for oversized content.
pub fn write_text(ws: &Workspace, path: &str, content: &str) -> Result<(), ToolFailure> {
    check_path(path)?;
    if content.len() > WRITE_CAP {
        return Err(fail(
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
    let dir = open_parent(ws, &comps, true, path)?;
    refuse_inside_control_dir(ws, &dir, path)?;
    let cname = cstr(name)?;
    // An existing target must be a regular file (or a symlink, which rename replaces).
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstatat writes one stat struct; AT_SYMLINK_NOFOLLOW never leaves the directory.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            cname.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    let mut mode = 0o644;
    if rc == 0 {
        // SAFETY: fstatat succeeded.
        let st = unsafe { st.assume_init() };
        if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
            return Err(fail("IsADirectory", format!("{path:?} is a directory")));
        }
        if st.st_mode & libc::S_IFMT == libc::S_IFREG {
            mode = st.st_mode & 0o777;
        }
    }
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
#[allow(clippy::unwrap_used, clippy::undocumented_unsafe_blocks)]
mod tests {
    use super::*;

    fn ws() -> (tempfile::TempDir, Workspace) {
        let d = tempfile::tempdir().unwrap();
        let w = Workspace::open(d.path()).unwrap();
        (d, w)
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
    fn fifo_does_not_hang() {
        let (d, w) = ws();
        let p = CString::new(d.path().join("fifo").to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(p.as_ptr(), 0o644) }, 0);
        assert_eq!(read_text(&w, "fifo").unwrap_err().type_name, "BadArgument");
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
        let t = |p: &str| write_text(&w, p, "x").unwrap_err().type_name;
        assert_eq!(t("../escape.txt"), "PathOutsideWorkspace");
        assert_eq!(t("/tmp/escape.txt"), "PathOutsideWorkspace");
        assert_eq!(t("new"), "IsADirectory");
        assert_eq!(t("."), "IsADirectory");
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
        // A symlinked *file* target is replaced, not followed.
        let target = outside.path().join("victim");
        std::fs::write(&target, "safe").unwrap();
        std::os::unix::fs::symlink(&target, d.path().join("victim_link")).unwrap();
        write_text(&w, "victim_link", "x").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "safe");
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
