//! Files lackpy opens for its own use under a workspace, each opened
//! beneath a directory descriptor with one `openat2(2)`: never a path
//! string checked first and opened later (a program may swap any file of
//! the workspace for a symlink or a FIFO between the two).
//!
//! [`Dir`] is an open directory. Everything opened through it resolves
//! with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`:
//! no component may be a symlink, none may leave the directory. A symlink
//! met on the way is [`Error::Symlink`], refused and reported, never
//! followed. Reads take regular files only, opened `O_NONBLOCK` (a FIFO
//! cannot hang the caller) and checked with `fstat`, up to a stated size.
//!
//! [`control_dir`] opens the workspace's control directory `.lackpy/`
//! (config, kits, templates, the ratchet, python tool modules, traces).

use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

/// The workspace's control directory: lackpy's config, kits, templates,
/// ratchet, python tool modules and traces. Never program-writable.
pub const CONTROL_DIR: &str = ".lackpy";

const RESOLVE_NO_SYMLINKS: u64 = 0x04;
const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_BENEATH: u64 = 0x08;
/// Longest relative name accepted (Linux's `PATH_MAX`).
const NAME_CAP: usize = 4096;

/// Why a file under a workspace could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A component of the path is a symlink (or the path leaves the directory).
    #[error("{} is a symlink (or goes through one); lackpy never follows symlinks in its control files: replace it with the real file or directory", path.display())]
    Symlink {
        /// The path as lackpy names it.
        path: PathBuf,
    },
    /// Not a regular file (a FIFO, device, socket or directory).
    #[error("{} is not a regular file", path.display())]
    NotRegular {
        /// The path as lackpy names it.
        path: PathBuf,
    },
    /// Larger than the caller's cap.
    #[error("{} is larger than {cap} bytes", path.display())]
    TooLarge {
        /// The path as lackpy names it.
        path: PathBuf,
        /// The cap in bytes.
        cap: u64,
    },
    /// A directory holding more entries than the caller's cap.
    #[error("{} holds more than {cap} entries", path.display())]
    TooManyEntries {
        /// The directory as lackpy names it.
        path: PathBuf,
        /// The cap in entries.
        cap: usize,
    },
    /// Not valid UTF-8.
    #[error("{} is not valid UTF-8", path.display())]
    NotUtf8 {
        /// The path as lackpy names it.
        path: PathBuf,
    },
    /// A name that is empty, absolute, has a `..` or `.` component, a NUL
    /// byte, or is too long.
    #[error("{name:?} is not a plain relative name")]
    BadName {
        /// The name given.
        name: String,
    },
    /// Any other I/O error.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path as lackpy names it.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// Whether the error is a refused symlink.
    pub fn is_symlink(&self) -> bool {
        matches!(self, Error::Symlink { .. })
    }
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// What kind of entry a directory listing found (links not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symlink (never followed).
    Symlink,
    /// Anything else (FIFO, socket, device).
    Other,
}

/// Identity and age of an entry, for cheap "did it change?" checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// What it is (links not followed).
    pub kind: Kind,
    /// Device number.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i128,
}

/// An open directory (`O_PATH`), and the path it was opened as (for messages).
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// The kernel's `struct open_how` (libc's is non-exhaustive).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// `openat2(dir, name, flags, mode, resolve)`, retried on `EINTR`/`EAGAIN`.
///
/// # Errors
/// The raw errno.
pub fn openat2(
    dir: RawFd,
    name: &CString,
    flags: i32,
    mode: u32,
    resolve: u64,
) -> std::result::Result<OwnedFd, i32> {
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
        resolve,
    };
    loop {
        // SAFETY: `name` is NUL-terminated; `how` is a valid open_how of the size passed.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir,
                name.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>(),
            )
        };
        if fd >= 0 {
            let fd = RawFd::try_from(fd).map_err(|_| libc::EBADF)?;
            // SAFETY: a fresh descriptor owned by nobody else.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let e = errno();
        if e != libc::EINTR && e != libc::EAGAIN {
            return Err(e);
        }
    }
}

/// The strict resolution used for every control file.
const STRICT: u64 = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

/// `fstat` of a descriptor.
fn fstat(fd: RawFd) -> std::result::Result<libc::stat, i32> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes one stat struct.
    if unsafe { libc::fstat(fd, st.as_mut_ptr()) } != 0 {
        return Err(errno());
    }
    // SAFETY: fstat succeeded.
    Ok(unsafe { st.assume_init() })
}

fn kind_of(mode: libc::mode_t) -> Kind {
    match mode & libc::S_IFMT {
        libc::S_IFREG => Kind::File,
        libc::S_IFDIR => Kind::Dir,
        libc::S_IFLNK => Kind::Symlink,
        _ => Kind::Other,
    }
}

fn stamp_of(st: &libc::stat) -> Stamp {
    Stamp {
        kind: kind_of(st.st_mode),
        dev: st.st_dev,
        ino: st.st_ino,
        size: u64::try_from(st.st_size).unwrap_or(0),
        mtime_ns: i128::from(st.st_mtime) * 1_000_000_000 + i128::from(st.st_mtime_nsec),
    }
}

/// Check a relative name: no empty, `.` or `..` component, not absolute,
/// no NUL, bounded.
fn check_name(name: &str) -> Result<CString> {
    let bad = || Error::BadName {
        name: name.chars().take(200).collect(),
    };
    if name.is_empty()
        || name.len() > NAME_CAP
        || name.starts_with('/')
        || name
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err(bad());
    }
    CString::new(name).map_err(|_| bad())
}

impl Dir {
    /// Open `path` as a directory. The path itself is the operator's (a
    /// workspace given on the command line or in config), so it is
    /// resolved normally; everything below it is not.
    ///
    /// # Errors
    /// [`Error::Io`] (missing, not a directory, ...).
    pub fn open(path: &Path) -> Result<Dir> {
        use std::os::unix::ffi::OsStrExt;
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io(std::io::Error::from_raw_os_error(libc::EINVAL)))?;
        // SAFETY: `c` is NUL-terminated.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io(std::io::Error::last_os_error()));
        }
        Ok(Dir {
            // SAFETY: a fresh descriptor owned by nobody else.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            path: path.to_path_buf(),
        })
    }

    /// The path this directory was opened as (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory's descriptor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.fd.as_fd()
    }

    fn error(&self, name: &str, e: i32) -> Error {
        let path = self.path.join(name);
        match e {
            libc::ELOOP | libc::EXDEV => Error::Symlink { path },
            _ => Error::Io {
                path,
                source: std::io::Error::from_raw_os_error(e),
            },
        }
    }

    /// The directory `name` below this one, `None` when it does not exist
    /// (created first, one component at a time, when `create`).
    ///
    /// # Errors
    /// [`Error::Symlink`] when a component is a symlink, [`Error::Io`]
    /// when one is not a directory or cannot be created.
    pub fn subdir(&self, name: &str, create: bool) -> Result<Option<Dir>> {
        let c = check_name(name)?;
        let flags = libc::O_PATH | libc::O_DIRECTORY;
        match openat2(self.fd.as_raw_fd(), &c, flags, 0, STRICT) {
            Ok(fd) => {
                return Ok(Some(Dir {
                    fd,
                    path: self.path.join(name),
                }))
            }
            Err(libc::ENOENT) if create => {}
            // Absent, or something other than a directory in its place (a
            // plain file named `.lackpy`): nothing to read from there.
            Err(libc::ENOENT | libc::ENOTDIR) if !create => return Ok(None),
            Err(e) => return Err(self.error(name, e)),
        }
        let mut at = Dir {
            fd: openat2(self.fd.as_raw_fd(), &check_name_dot(), flags, 0, STRICT)
                .map_err(|e| self.error(".", e))?,
            path: self.path.clone(),
        };
        for comp in name.split('/') {
            let cc = check_name(comp)?;
            // SAFETY: `cc` is NUL-terminated; `at.fd` is an open directory.
            let rc = unsafe { libc::mkdirat(at.fd.as_raw_fd(), cc.as_ptr(), 0o755) };
            if rc != 0 && errno() != libc::EEXIST {
                return Err(at.error(comp, errno()));
            }
            let fd =
                openat2(at.fd.as_raw_fd(), &cc, flags, 0, STRICT).map_err(|e| at.error(comp, e))?;
            at = Dir {
                fd,
                path: at.path.join(comp),
            };
        }
        Ok(Some(at))
    }

    /// Read the regular file `name` (at most `cap` bytes); `None` when it
    /// does not exist.
    ///
    /// # Errors
    /// [`Error::Symlink`], [`Error::NotRegular`], [`Error::TooLarge`], [`Error::Io`].
    pub fn read(&self, name: &str, cap: u64) -> Result<Option<Vec<u8>>> {
        let Some(file) = self.open_read(name)? else {
            return Ok(None);
        };
        read_capped(file, &self.path.join(name), cap).map(Some)
    }

    /// [`Dir::read`] as UTF-8 text.
    ///
    /// # Errors
    /// As [`Dir::read`], plus [`Error::NotUtf8`].
    pub fn read_text(&self, name: &str, cap: u64) -> Result<Option<String>> {
        match self.read(name, cap)? {
            None => Ok(None),
            Some(b) => String::from_utf8(b).map(Some).map_err(|_| Error::NotUtf8 {
                path: self.path.join(name),
            }),
        }
    }

    /// Open the regular file `name` for reading (`O_NONBLOCK`, checked with
    /// `fstat`); `None` when it does not exist.
    ///
    /// # Errors
    /// [`Error::Symlink`], [`Error::NotRegular`], [`Error::Io`].
    pub fn open_read(&self, name: &str) -> Result<Option<File>> {
        let c = check_name(name)?;
        let fd = match openat2(
            self.fd.as_raw_fd(),
            &c,
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOFOLLOW,
            0,
            STRICT,
        ) {
            Ok(fd) => fd,
            Err(libc::ENOENT) => return Ok(None),
            Err(e) => return Err(self.error(name, e)),
        };
        let st = fstat(fd.as_raw_fd()).map_err(|e| self.error(name, e))?;
        if kind_of(st.st_mode) != Kind::File {
            return Err(Error::NotRegular {
                path: self.path.join(name),
            });
        }
        Ok(Some(File::from(fd)))
    }

    /// The entries of this directory (not `.` or `..`), sorted by name,
    /// at most `max` of them (more is [`Error::TooManyEntries`]).
    ///
    /// # Errors
    /// [`Error::Io`] when the directory cannot be read.
    pub fn entries(&self, max: usize) -> Result<Vec<(String, Kind)>> {
        self.entries_where(max, |_| true)
    }

    /// The entries of this directory whose name `keep` accepts, sorted by
    /// name, at most `max` of them (more is [`Error::TooManyEntries`]);
    /// the others are read past, neither held nor counted. Why: a caller
    /// that wants only its own names must not be stopped by others'.
    ///
    /// # Errors
    /// [`Error::Io`] when the directory cannot be read.
    pub fn entries_where(
        &self,
        max: usize,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Vec<(String, Kind)>> {
        let dot = check_name_dot();
        let fd = openat2(
            self.fd.as_raw_fd(),
            &dot,
            libc::O_RDONLY | libc::O_DIRECTORY,
            0,
            STRICT,
        )
        .map_err(|e| self.error(".", e))?;
        let raw = fd.as_raw_fd();
        // SAFETY: fdopendir takes ownership of the descriptor on success
        // (closed by closedir below); on failure we still own it.
        let dirp = unsafe { libc::fdopendir(raw) };
        if dirp.is_null() {
            return Err(self.error(".", errno()));
        }
        std::mem::forget(fd);
        let mut out = Vec::new();
        let mut over = false;
        loop {
            // SAFETY: `dirp` is a valid open DIR stream until closedir.
            let ent = unsafe { libc::readdir64(dirp) };
            if ent.is_null() {
                break;
            }
            // SAFETY: readdir64 returned a valid dirent64 whose d_name is NUL-terminated.
            let (name, dtype) = unsafe {
                (
                    std::ffi::CStr::from_ptr((*ent).d_name.as_ptr()),
                    (*ent).d_type,
                )
            };
            let bytes = name.to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            let Ok(s) = std::str::from_utf8(bytes) else {
                continue; // lackpy names its own files in ASCII
            };
            if !keep(s) {
                continue;
            }
            if out.len() >= max {
                over = true;
                break;
            }
            let kind = match dtype {
                libc::DT_REG => Kind::File,
                libc::DT_DIR => Kind::Dir,
                libc::DT_LNK => Kind::Symlink,
                libc::DT_UNKNOWN => self.stamp(s).map_or(Kind::Other, |st| st.kind),
                _ => Kind::Other,
            };
            out.push((s.to_string(), kind));
        }
        // SAFETY: `dirp` came from fdopendir and is closed once.
        unsafe { libc::closedir(dirp) };
        if over {
            return Err(Error::TooManyEntries {
                path: self.path.clone(),
                cap: max,
            });
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// [`Stamp`] of `name` without following a final symlink; `None` when
    /// it does not exist or cannot be examined.
    pub fn stamp(&self, name: &str) -> Option<Stamp> {
        let c = check_name(name).ok()?;
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: fstatat writes one stat struct; AT_SYMLINK_NOFOLLOW
        // examines the name itself; `c` is a relative plain name.
        let rc = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                st.as_mut_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if rc != 0 {
            return None;
        }
        // SAFETY: fstatat succeeded.
        Some(stamp_of(&unsafe { st.assume_init() }))
    }

    /// [`Stamp`] of this directory itself.
    pub fn own_stamp(&self) -> Option<Stamp> {
        fstat(self.fd.as_raw_fd()).ok().map(|st| stamp_of(&st))
    }

    /// Open the regular file `name` for appending, creating it (mode
    /// 0644) when absent; never through a symlink.
    ///
    /// # Errors
    /// [`Error::Symlink`], [`Error::NotRegular`], [`Error::Io`].
    pub fn open_append(&self, name: &str) -> Result<File> {
        let c = check_name(name)?;
        let fd = openat2(
            self.fd.as_raw_fd(),
            &c,
            libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_NONBLOCK | libc::O_NOFOLLOW,
            0o644,
            STRICT,
        )
        .map_err(|e| self.error(name, e))?;
        let st = fstat(fd.as_raw_fd()).map_err(|e| self.error(name, e))?;
        if kind_of(st.st_mode) != Kind::File {
            return Err(Error::NotRegular {
                path: self.path.join(name),
            });
        }
        Ok(File::from(fd))
    }

    /// Replace (or create) the file `name` of this directory with `data`
    /// atomically: a temp file beside it, `fsync`, `renameat` over it (a
    /// symlink at `name` is replaced, never written through).
    ///
    /// # Errors
    /// [`Error::BadName`] for a name with a `/`, [`Error::Io`].
    pub fn write_atomic(&self, name: &str, data: &[u8]) -> Result<()> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        if name.contains('/') {
            return Err(Error::BadName { name: name.into() });
        }
        let c = check_name(name)?;
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp_name = format!(".{name}.tmp-{}-{n}", std::process::id());
        let tmp = check_name(&tmp_name)?;
        let fd = openat2(
            self.fd.as_raw_fd(),
            &tmp,
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
            0o644,
            STRICT,
        )
        .map_err(|e| self.error(&tmp_name, e))?;
        let mut f = File::from(fd);
        let wrote = f.write_all(data).and_then(|()| f.sync_all());
        drop(f);
        // SAFETY: both names are NUL-terminated plain names inside the
        // directory descriptor, which is open.
        let rc = wrote.map(|()| unsafe {
            libc::renameat(
                self.fd.as_raw_fd(),
                tmp.as_ptr(),
                self.fd.as_raw_fd(),
                c.as_ptr(),
            )
        });
        let failed = match rc {
            Ok(0) => None,
            Ok(_) => Some(std::io::Error::last_os_error()),
            Err(e) => Some(e),
        };
        if let Some(source) = failed {
            // SAFETY: unlinking our own temp name inside the directory.
            unsafe { libc::unlinkat(self.fd.as_raw_fd(), tmp.as_ptr(), 0) };
            return Err(Error::Io {
                path: self.path.join(name),
                source,
            });
        }
        Ok(())
    }

    /// Remove the regular file (or symlink) `name` of this directory.
    ///
    /// # Errors
    /// [`Error::Io`].
    pub fn remove(&self, name: &str) -> Result<()> {
        let c = check_name(name)?;
        // SAFETY: `c` is a NUL-terminated name inside the open directory.
        if unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) } != 0 {
            return Err(self.error(name, errno()));
        }
        Ok(())
    }
}

fn check_name_dot() -> CString {
    CString::from(c".")
}

/// Read at most `cap` bytes of `file` (more is [`Error::TooLarge`]).
fn read_capped(file: File, path: &Path, cap: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > cap {
        return Err(Error::TooLarge {
            path: path.to_path_buf(),
            cap,
        });
    }
    let mut buf = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if buf.len() as u64 > cap {
        return Err(Error::TooLarge {
            path: path.to_path_buf(),
            cap,
        });
    }
    Ok(buf)
}

/// The workspace's control directory `.lackpy/`, `None` when absent
/// (created when `create`).
///
/// # Errors
/// [`Error::Symlink`] when `.lackpy` is a symlink, [`Error::Io`].
pub fn control_dir(workspace: &Dir, create: bool) -> Result<Option<Dir>> {
    workspace.subdir(CONTROL_DIR, create)
}

/// Open `workspace`, then its control directory (see [`control_dir`]).
///
/// # Errors
/// As [`Dir::open`] and [`control_dir`].
pub fn open_control(workspace: &Path, create: bool) -> Result<Option<Dir>> {
    control_dir(&Dir::open(workspace)?, create)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn symlinked_control_dir_is_refused() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("real")).unwrap();
        symlink("real", d.path().join(CONTROL_DIR)).unwrap();
        let e = open_control(d.path(), false).unwrap_err();
        assert!(e.is_symlink(), "{e}");
        let e = open_control(d.path(), true).unwrap_err();
        assert!(e.is_symlink(), "{e}");
        assert!(e.to_string().contains(".lackpy"), "{e}");
    }

    #[test]
    fn absent_created_and_read() {
        let d = tempfile::tempdir().unwrap();
        assert!(open_control(d.path(), false).unwrap().is_none());
        let c = open_control(d.path(), true).unwrap().unwrap();
        assert!(c.read("config.toml", 100).unwrap().is_none());
        c.write_atomic("config.toml", b"x = 1").unwrap();
        assert_eq!(c.read_text("config.toml", 100).unwrap().unwrap(), "x = 1");
        let e = c.read("config.toml", 2).unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{e}");
        let t = c.subdir("traces", true).unwrap().unwrap();
        let mut f = t.open_append("a.jsonl").unwrap();
        f.write_all(b"line\n").unwrap();
        assert_eq!(t.read("a.jsonl", 100).unwrap().unwrap(), b"line\n");
        let names: Vec<String> = c.entries(10).unwrap().into_iter().map(|e| e.0).collect();
        assert_eq!(names, ["config.toml", "traces"]);
        assert!(matches!(
            c.entries(1),
            Err(Error::TooManyEntries { cap: 1, .. })
        ));
        let kept = c.entries_where(1, |n| n.ends_with(".toml")).unwrap();
        assert_eq!(kept.len(), 1);
    }

    #[test]
    fn symlinks_and_fifos_inside_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let c = open_control(d.path(), true).unwrap().unwrap();
        symlink(
            outside.path().join("secret"),
            d.path().join(".lackpy/config.toml"),
        )
        .unwrap();
        symlink(outside.path(), d.path().join(".lackpy/traces")).unwrap();
        assert!(c.read("config.toml", 100).unwrap_err().is_symlink());
        assert!(c.open_append("config.toml").unwrap_err().is_symlink());
        assert!(c.subdir("traces", true).unwrap_err().is_symlink());
        assert!(c.read("traces/x", 100).unwrap_err().is_symlink());
        // The outside file was never touched.
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret")).unwrap(),
            "s"
        );
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
        // A FIFO does not hang a read.
        let fifo = CString::new(d.path().join(".lackpy/f").to_str().unwrap()).unwrap();
        // SAFETY: test: creating a FIFO at a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        assert!(matches!(
            c.read("f", 100).unwrap_err(),
            Error::NotRegular { .. }
        ));
        // Atomic writes replace a symlink instead of writing through it.
        c.write_atomic("config.toml", b"mine").unwrap();
        assert_eq!(
            std::fs::read_to_string(outside.path().join("secret")).unwrap(),
            "s"
        );
        assert_eq!(c.read("config.toml", 10).unwrap().unwrap(), b"mine");
    }

    #[test]
    fn bad_names() {
        let d = tempfile::tempdir().unwrap();
        let w = Dir::open(d.path()).unwrap();
        for n in ["", "/etc", "../x", "a/../b", "a//b", "./a", "a\0b"] {
            assert!(matches!(w.read(n, 1), Err(Error::BadName { .. })), "{n:?}");
        }
    }
}
