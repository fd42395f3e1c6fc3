//! Reading a child's pipes with a deadline and a size cap, and killing its
//! whole process group. A tool child is never trusted to stop writing, to
//! exit, or to close its pipes.

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::os::fd::{AsFd, BorrowedFd};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Why reading from a child stopped early.
#[derive(Debug)]
pub(crate) enum PipeError {
    /// The deadline passed.
    Timeout,
    /// The run was cancelled.
    Cancelled,
    /// More than the cap arrived.
    TooLarge,
    /// The stream ended before a complete line.
    Eof,
    /// `poll`/`read` failed.
    Io(std::io::Error),
}

/// When waiting on a child must stop: a deadline, and the run's cancel
/// flag if it has one.
#[derive(Debug, Clone)]
pub(crate) struct Until {
    deadline: Instant,
    cancel: Option<Arc<AtomicBool>>,
}

/// How often a wait looks at the cancel flag. Why 50 ms: a cancelled run's
/// tool child is killed well within a human's notice, and a wait wakes at
/// most 20 times a second for it.
const CANCEL_EVERY: Duration = Duration::from_millis(50);

impl Until {
    /// Stop at `deadline`, or as soon as `cancel` is set.
    pub(crate) fn new(deadline: Instant, cancel: Option<Arc<AtomicBool>>) -> Until {
        Until { deadline, cancel }
    }

    /// Why waiting must stop now, if it must.
    pub(crate) fn ended(&self) -> Option<PipeError> {
        if self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
        {
            return Some(PipeError::Cancelled);
        }
        (Instant::now() >= self.deadline).then_some(PipeError::Timeout)
    }

    /// How long one `poll` may sleep: until the deadline (0 when passed),
    /// in slices of [`CANCEL_EVERY`] when there is a cancel flag to watch.
    fn poll_timeout(&self) -> PollTimeout {
        let mut left = self.deadline.saturating_duration_since(Instant::now());
        if self.cancel.is_some() {
            left = left.min(CANCEL_EVERY);
        }
        let ms = left.as_millis().min(u128::from(u16::MAX));
        PollTimeout::from(u16::try_from(ms).unwrap_or(u16::MAX))
    }
}

impl From<Instant> for Until {
    fn from(deadline: Instant) -> Until {
        Until::new(deadline, None)
    }
}

/// Wait until `fd` is readable (or hung up), or fail with why waiting ended.
fn wait_readable(fd: BorrowedFd<'_>, until: &Until) -> Result<(), PipeError> {
    loop {
        if let Some(e) = until.ended() {
            return Err(e);
        }
        let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
        match poll(&mut fds, until.poll_timeout()) {
            Ok(0) => continue,
            Ok(_) => return Ok(()),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(PipeError::Io(e.into())),
        }
    }
}

/// Read one `\n`-terminated line (returned without the newline) from `fd`.
/// `buf` keeps bytes read past the line for the next call.
pub(crate) fn read_line<F: AsFd>(
    fd: &F,
    buf: &mut Vec<u8>,
    until: &Until,
    cap: usize,
) -> Result<Vec<u8>, PipeError> {
    let mut chunk = vec![0u8; 64 * 1024];
    let mut scanned = 0;
    loop {
        if let Some(pos) = buf[scanned..].iter().position(|&b| b == b'\n') {
            let end = scanned + pos;
            if end > cap {
                return Err(PipeError::TooLarge);
            }
            let line = buf[..end].to_vec();
            buf.drain(..=end);
            return Ok(line);
        }
        scanned = buf.len();
        if buf.len() > cap {
            return Err(PipeError::TooLarge);
        }
        wait_readable(fd.as_fd(), until)?;
        match nix::unistd::read(fd.as_fd(), &mut chunk) {
            Ok(0) => return Err(PipeError::Eof),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(nix::errno::Errno::EINTR | nix::errno::Errno::EAGAIN) => {}
            Err(e) => return Err(PipeError::Io(e.into())),
        }
    }
}

/// Read `out` and `err` to EOF concurrently. `out` may hold at most `cap`
/// bytes; `err` keeps only its first `err_cap` bytes (the rest is drained).
pub(crate) fn read_both<A: AsFd, B: AsFd>(
    out: &A,
    err: &B,
    until: &Until,
    cap: usize,
    err_cap: usize,
) -> Result<(Vec<u8>, Vec<u8>), PipeError> {
    let mut o = Vec::new();
    let mut e = Vec::new();
    let (mut o_open, mut e_open) = (true, true);
    let mut chunk = vec![0u8; 64 * 1024];
    while o_open || e_open {
        if let Some(e) = until.ended() {
            return Err(e);
        }
        let mut fds = Vec::with_capacity(2);
        if o_open {
            fds.push(PollFd::new(out.as_fd(), PollFlags::POLLIN));
        }
        if e_open {
            fds.push(PollFd::new(err.as_fd(), PollFlags::POLLIN));
        }
        match poll(&mut fds, until.poll_timeout()) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(x) => return Err(PipeError::Io(x.into())),
        }
        let ready: Vec<bool> = fds
            .iter()
            .map(|f| f.revents().is_some_and(|r| !r.is_empty()))
            .collect();
        drop(fds);
        let mut i = 0;
        if o_open {
            if ready[i] {
                o_open = read_some(out.as_fd(), &mut chunk, &mut o, cap)?;
            }
            i += 1;
        }
        if e_open && ready[i] {
            match nix::unistd::read(err.as_fd(), &mut chunk) {
                Ok(0) => e_open = false,
                Ok(n) => {
                    let room = err_cap.saturating_sub(e.len()).min(n);
                    e.extend_from_slice(&chunk[..room]);
                }
                Err(nix::errno::Errno::EINTR | nix::errno::Errno::EAGAIN) => {}
                Err(x) => return Err(PipeError::Io(x.into())),
            }
        }
    }
    Ok((o, e))
}

/// Kill the child's whole process group (it was started as a group leader)
/// and reap the child.
pub(crate) fn kill_group(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // The child is its own process-group leader (`process_group(0)`), so
        // this reaches everything it forked too.
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Read `fd` to EOF into `buf`, at most `cap` bytes, before `until` ends.
pub(crate) fn read_all<F: AsFd>(
    fd: &F,
    buf: &mut Vec<u8>,
    until: &Until,
    cap: usize,
) -> Result<(), PipeError> {
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        wait_readable(fd.as_fd(), until)?;
        if !read_some(fd.as_fd(), &mut chunk, buf, cap)? {
            return Ok(());
        }
    }
}

/// One read of `fd` (through `chunk`) appended to `buf`, which may hold at
/// most `cap` bytes: whether `fd` is still open (false at EOF).
fn read_some(
    fd: BorrowedFd<'_>,
    chunk: &mut [u8],
    buf: &mut Vec<u8>,
    cap: usize,
) -> Result<bool, PipeError> {
    match nix::unistd::read(fd, chunk) {
        Ok(0) => Ok(false),
        Ok(n) => {
            if buf.len() + n > cap {
                return Err(PipeError::TooLarge);
            }
            buf.extend_from_slice(&chunk[..n]);
            Ok(true)
        }
        Err(nix::errno::Errno::EINTR | nix::errno::Errno::EAGAIN) => Ok(true),
        Err(e) => Err(PipeError::Io(e.into())),
    }
}
