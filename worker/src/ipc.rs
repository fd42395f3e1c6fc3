//! Framing of IPC messages over a `SOCK_SEQPACKET` socketpair, shared by the
//! supervisor and the workers.
//!
//! A *frame* is one message enum ([`ToWorker`](lackpy_policy::wire::ToWorker)
//! or [`FromWorker`](lackpy_policy::wire::FromWorker)) encoded with bincode 2
//! (standard config, decode limit [`MAX_FRAME_BYTES`]) behind a `u32`
//! little-endian length prefix. Seqpacket keeps message boundaries, but one
//! message can be no larger than the socket's send buffer (about 200 KiB by
//! default, `net.core.wmem_max` caps what an unprivileged process may ask
//! for), so a frame travels as one or more *chunks* of at most
//! [`CHUNK_BYTES`]:
//!
//! ```text
//! first chunk:   [len: u32 LE][payload bytes 0 .. min(len, CHUNK_BYTES-4)]
//! continuation:  [payload bytes ...]            (each <= CHUNK_BYTES)
//! ```
//!
//! The receiver treats the other side as hostile: the length is checked
//! against the cap before anything is allocated, every `recvmsg` checks
//! `MSG_TRUNC` (a chunk larger than the buffer is an error, never silently
//! cut), a chunk that overruns the announced length is an error, and the
//! payload must decode to exactly `len` bytes. With a deadline, every wait
//! (each chunk, in both directions) is bounded, so a peer that stalls
//! mid-frame cannot hang the supervisor.

#![deny(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::ptr_as_ptr
)]

use bincode::{Decode, Encode};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Instant;

pub use lackpy_policy::wire::MAX_FRAME_BYTES;

/// Largest single seqpacket message, in bytes.
/// Why 64 KiB: well under the default unix socket send buffer (~208 KiB),
/// so a send never fails with `EMSGSIZE` without raising `SO_SNDBUF`, and
/// big enough that an 8 MiB result needs only 128 messages.
pub const CHUNK_BYTES: usize = 64 * 1024;

/// The descriptor a worker finds its IPC socket on (the zygote: its
/// control socket). The supervisor's launch puts it there
/// ([`crate::jail::Plan::for_launch`]), a zygote's forked worker moves its
/// own socket there, and the seccomp filters allow socket I/O on it only.
pub const IPC_FD: RawFd = 3;

/// Bytes of the length prefix.
const PREFIX: usize = 4;

/// Largest send buffer a channel keeps between frames, in bytes.
/// Why 64 KiB: tool calls, results and printed chunks are usually far
/// smaller; a rare large frame's buffer is freed instead of held.
const KEPT_SEND_BYTES: usize = 64 * 1024;

/// Why a frame could not be sent or received.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The announced (or encoded) length exceeds the cap.
    #[error("frame of {len} bytes exceeds the {max}-byte limit")]
    TooLarge {
        /// Announced length.
        len: usize,
        /// The cap.
        max: usize,
    },
    /// The peer closed the connection in the middle of a frame.
    #[error("frame truncated: peer closed after {got} of {len} bytes")]
    Truncated {
        /// Bytes received.
        got: usize,
        /// Bytes announced.
        len: usize,
    },
    /// A chunk does not fit the framing rules.
    #[error("malformed frame: {0}")]
    Malformed(&'static str),
    /// The payload is not a valid message.
    #[error("undecodable frame: {0}")]
    Decode(String),
    /// A message could not be encoded (for example it is too large).
    #[error("unencodable message: {0}")]
    Encode(String),
    /// A message within [`MAX_FRAME_BYTES`] on the wire that holds so many
    /// values that decoding it would take more than [`MAX_FRAME_BYTES`] of
    /// memory (bincode's limit counts each vector element at its size in
    /// memory, 32 bytes for a one-byte `None`): the peer would refuse it,
    /// so it is never sent.
    #[error(
        "a message of {len} bytes holds too many values: decoded it would take more than {max} bytes of memory"
    )]
    TooManyValues {
        /// Encoded length.
        len: usize,
        /// The decoder's memory cap ([`MAX_FRAME_BYTES`]).
        max: usize,
    },
    /// The peer closed the connection between frames.
    #[error("connection closed")]
    Closed,
    /// The deadline passed while waiting.
    #[error("timed out waiting for the peer")]
    Timeout,
    /// A socket call failed.
    #[error("socket error: {0}")]
    Io(#[from] std::io::Error),
}

/// The bincode configuration both sides use.
fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_FRAME_BYTES>()
}

/// Largest in-memory size of an element of any vector in a wire message
/// (a `Node`, a `FlatData`, a `(String, FlatData)`, a `ToolSig`, a `u8` of
/// a `String`…; `tests::wire_elements_fit_the_claim_bound` checks them).
/// Why: every element takes at least one byte on the wire, so a payload
/// of at most [`CLAIM_FREE_BYTES`] cannot claim more than
/// [`MAX_FRAME_BYTES`] when decoded, and needs no trial decode.
const MAX_WIRE_ELEM: usize = 128;

/// Longest payload that decodes within the limit whatever it holds.
const CLAIM_FREE_BYTES: usize = MAX_FRAME_BYTES / MAX_WIRE_ELEM;

/// Check that the encoded `payload` of a `T` decodes within the limit the
/// peer applies: bincode's limit also counts memory (a vector of `n`
/// elements claims `n` times their size before any is read), so a frame
/// well under [`MAX_FRAME_BYTES`] of many small values — `[0] * 600000` as
/// a program's value, 700,000 lines from a command tool — would be
/// refused by the peer as undecodable, which each side takes for a
/// protocol violation of the other. Payloads of at most
/// [`CLAIM_FREE_BYTES`] cannot exceed it; longer ones are decoded once here.
///
/// # Errors
/// [`FrameError::TooManyValues`].
fn check_claims<T: Decode<()>>(payload: &[u8]) -> Result<(), FrameError> {
    if payload.len() <= CLAIM_FREE_BYTES {
        return Ok(());
    }
    match bincode::decode_from_slice::<T, _>(payload, config()) {
        Err(bincode::error::DecodeError::LimitExceeded) => Err(FrameError::TooManyValues {
            len: payload.len(),
            max: MAX_FRAME_BYTES,
        }),
        _ => Ok(()),
    }
}

/// Encode `msg` as a frame payload (no prefix).
///
/// # Errors
/// [`FrameError::TooLarge`] when the encoding exceeds [`MAX_FRAME_BYTES`],
/// [`FrameError::TooManyValues`] when decoding it would exceed the limit.
pub fn encode<T: Encode + Decode<()>>(msg: &T) -> Result<Vec<u8>, FrameError> {
    let bytes =
        bincode::encode_to_vec(msg, config()).map_err(|e| FrameError::Encode(e.to_string()))?;
    frame_len(bytes.len())?;
    check_claims::<T>(&bytes)?;
    Ok(bytes)
}

/// A payload of `len` bytes as its frame's length prefix, when it is within
/// [`MAX_FRAME_BYTES`] (the one bound [`encode`] and [`Channel::send`] apply).
fn frame_len(len: usize) -> Result<u32, FrameError> {
    u32::try_from(len)
        .ok()
        .filter(|_| len <= MAX_FRAME_BYTES)
        .ok_or(FrameError::TooLarge {
            len,
            max: MAX_FRAME_BYTES,
        })
}

/// Decode a complete frame payload; every byte must be consumed.
///
/// # Errors
/// [`FrameError::Decode`] for invalid bincode, [`FrameError::Malformed`] for trailing bytes.
pub fn decode<T: Decode<()>>(payload: &[u8]) -> Result<T, FrameError> {
    let (msg, used) = bincode::decode_from_slice::<T, _>(payload, config())
        .map_err(|e| FrameError::Decode(e.to_string()))?;
    if used != payload.len() {
        return Err(FrameError::Malformed("trailing bytes after the message"));
    }
    Ok(msg)
}

/// One end of a seqpacket socketpair.
#[derive(Debug)]
pub struct Channel {
    fd: OwnedFd,
    buf: ChunkBuf,
    /// The frame being sent: length prefix and payload, encoded in place and
    /// reused from frame to frame (see [`Channel::send`]).
    out: Vec<u8>,
    /// How long a receive polls without sleeping before it blocks.
    spin: std::time::Duration,
    /// What a receive does between polls while it spins.
    spin_wait: SpinWait,
}

/// What a spinning receive does between two polls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpinWait {
    /// A CPU pause hint: keeps the CPU. Right where the other runnable
    /// work is not ours (a loaded host), see [`Channel::set_spin`].
    Pause,
    /// `sched_yield`: hands the rest of the time slice to anything else
    /// runnable. Right where that is other runs of ours (a busy `serve`).
    Yield,
}

impl SpinWait {
    fn wait(self) {
        match self {
            SpinWait::Pause => std::hint::spin_loop(),
            // SAFETY: sched_yield takes no arguments and cannot fail.
            SpinWait::Yield => unsafe {
                libc::sched_yield();
            },
        }
    }
}

/// A channel's receive buffer: [`CHUNK_BYTES`] of private anonymous memory.
///
/// Why not `vec![0; CHUNK_BYTES]`: every worker (and the supervisor's end of
/// every worker's socket) has one, and a 64 KiB heap buffer costs a 64 KiB
/// `memset`, a `malloc_consolidate` of the allocator's fast bins, and, in a
/// freshly forked worker, sixteen page faults. Anonymous memory reads as
/// zero without being written, and only the pages a frame actually fills
/// are ever faulted in (one, for the usual small frame). A dropped buffer
/// goes to a short spare list for the next channel ([`SPARE_MAX`]). Falls
/// back to the heap if the mapping fails.
#[derive(Debug)]
struct ChunkBuf {
    ptr: *mut u8,
    /// Set when the mapping failed.
    heap: Vec<u8>,
}

// SAFETY: the mapping is owned exclusively by this value (never shared or
// aliased), like a Vec's allocation; moving it to another thread is fine.
unsafe impl Send for ChunkBuf {}
// SAFETY: `&ChunkBuf` only gives read access (`as_slice`); no interior mutability.
unsafe impl Sync for ChunkBuf {}

/// Most receive buffers kept mapped for reuse after their channel is gone.
/// Why: the supervisor opens a channel per run, and is multi-threaded, so
/// every `munmap` there is a TLB shootdown (an interrupt to each other CPU
/// running its threads, a VM exit each on a virtual machine). Sixteen
/// covers the runs in flight of any pool size in use; more are unmapped.
const SPARE_MAX: usize = 16;

/// Addresses of unused [`CHUNK_BYTES`] mappings, owned by this list.
static SPARE: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

impl ChunkBuf {
    fn new() -> Self {
        if let Some(addr) = SPARE.lock().ok().and_then(|mut s| s.pop()) {
            // A previous channel's buffer: its old contents are never read
            // (a receive reads only the bytes the kernel just wrote).
            return ChunkBuf {
                ptr: addr as *mut u8,
                heap: Vec::new(),
            };
        }
        // SAFETY: an anonymous private mapping of CHUNK_BYTES at an address
        // of the kernel's choosing; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                CHUNK_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            ChunkBuf {
                ptr: std::ptr::null_mut(),
                heap: vec![0u8; CHUNK_BYTES],
            }
        } else {
            ChunkBuf {
                ptr: p.cast(),
                heap: Vec::new(),
            }
        }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        if self.ptr.is_null() {
            &mut self.heap
        } else {
            // SAFETY: `ptr` is our live, exclusively owned mapping of
            // CHUNK_BYTES readable and writable bytes.
            unsafe { std::slice::from_raw_parts_mut(self.ptr, CHUNK_BYTES) }
        }
    }

    fn as_slice(&self) -> &[u8] {
        if self.ptr.is_null() {
            &self.heap
        } else {
            // SAFETY: as in `as_mut_slice`; shared access for reading.
            unsafe { std::slice::from_raw_parts(self.ptr, CHUNK_BYTES) }
        }
    }
}

impl Drop for ChunkBuf {
    fn drop(&mut self) {
        if self.ptr.is_null() {
            return;
        }
        if let Ok(mut spare) = SPARE.lock() {
            if spare.len() < SPARE_MAX {
                // Ownership of the mapping moves to the list.
                spare.push(self.ptr as usize);
                return;
            }
        }
        // SAFETY: unmapping exactly the mapping `new` created (or took from
        // the spare list), once; no slice into it outlives `self`.
        unsafe { libc::munmap(self.ptr.cast(), CHUNK_BYTES) };
    }
}

/// Create a connected `SOCK_SEQPACKET | SOCK_CLOEXEC` socketpair.
///
/// # Errors
/// The `socketpair` errno.
pub fn socketpair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1 as RawFd; 2];
    // SAFETY: `fds` is a valid array of two ints that the kernel fills in.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    use std::os::fd::FromRawFd;
    // SAFETY: both fds were just returned by socketpair and are owned by nobody else.
    let pair = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok(pair)
}

/// Wait until `fd` is ready for `events`, or the deadline passes.
fn wait_ready(
    fd: RawFd,
    events: libc::c_short,
    deadline: Option<Instant>,
) -> Result<(), FrameError> {
    loop {
        let timeout_ms: libc::c_int = match deadline {
            None => -1,
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    return Err(FrameError::Timeout);
                }
                // Round up so we never spin on a sub-millisecond remainder.
                let ms = (d - now).as_micros().div_ceil(1000);
                libc::c_int::try_from(ms).unwrap_or(libc::c_int::MAX)
            }
        };
        let mut pfd = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // SAFETY: `pfd` is one valid pollfd; nfds = 1.
        let rc = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if rc < 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(FrameError::Io(err));
        }
        if rc > 0 {
            // POLLHUP/POLLERR: let the following recv/send report it.
            return Ok(());
        }
    }
}

impl Channel {
    /// Wrap one end of a seqpacket socketpair.
    pub fn new(fd: OwnedFd) -> Self {
        Channel {
            fd,
            buf: ChunkBuf::new(),
            out: Vec::new(),
            spin: std::time::Duration::ZERO,
            spin_wait: SpinWait::Pause,
        }
    }

    /// The underlying descriptor.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Send one message as a frame. With a deadline, waits for buffer space
    /// at most until then.
    ///
    /// # Errors
    /// Encoding errors, [`FrameError::Timeout`], or the socket's errno
    /// (`EPIPE` when the peer is gone).
    pub fn send<T: Encode + Decode<()>>(
        &mut self,
        msg: &T,
        deadline: Option<Instant>,
    ) -> Result<(), FrameError> {
        // Encoded straight behind a placeholder prefix in the channel's own
        // buffer: no payload vector, no copy into a first chunk. The chunks
        // are the same as `send_payload`'s: the first holds the prefix and
        // the payload's first CHUNK_BYTES - 4 bytes, each continuation the
        // next CHUNK_BYTES.
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        out.extend_from_slice(&[0; PREFIX]);
        let r = bincode::encode_into_std_write(msg, &mut out, config())
            .map_err(|e| FrameError::Encode(e.to_string()))
            .and_then(|payload_len| {
                let len = frame_len(payload_len)?;
                check_claims::<T>(out.get(PREFIX..).unwrap_or_default())?;
                out[..PREFIX].copy_from_slice(&len.to_le_bytes());
                for chunk in out.chunks(CHUNK_BYTES) {
                    self.send_raw(chunk, deadline)?;
                }
                Ok(())
            });
        // A large frame's buffer is not kept: only small frames repeat.
        if out.capacity() <= KEPT_SEND_BYTES {
            self.out = out;
        }
        r
    }

    /// Send an already encoded payload (exposed for hostile-peer tests).
    ///
    /// # Errors
    /// As [`Channel::send`].
    pub fn send_payload(
        &mut self,
        payload: &[u8],
        deadline: Option<Instant>,
    ) -> Result<(), FrameError> {
        let len = u32::try_from(payload.len()).map_err(|_| FrameError::TooLarge {
            len: payload.len(),
            max: MAX_FRAME_BYTES,
        })?;
        let first_part = payload.len().min(CHUNK_BYTES - PREFIX);
        let mut first = Vec::with_capacity(PREFIX + first_part);
        first.extend_from_slice(&len.to_le_bytes());
        first.extend_from_slice(&payload[..first_part]);
        self.send_raw(&first, deadline)?;
        for chunk in payload[first_part..].chunks(CHUNK_BYTES) {
            self.send_raw(chunk, deadline)?;
        }
        Ok(())
    }

    /// Send one seqpacket message verbatim (exposed for hostile-peer tests).
    ///
    /// # Errors
    /// The socket's errno, or [`FrameError::Timeout`].
    pub fn send_raw(&mut self, msg: &[u8], deadline: Option<Instant>) -> Result<(), FrameError> {
        let fd = self.fd.as_raw_fd();
        loop {
            let flags = libc::MSG_NOSIGNAL
                | if deadline.is_some() {
                    libc::MSG_DONTWAIT
                } else {
                    0
                };
            // SAFETY: `msg` is a valid readable buffer of msg.len() bytes for the whole call.
            let rc = unsafe { libc::send(fd, msg.as_ptr().cast(), msg.len(), flags) };
            if rc >= 0 {
                return Ok(());
            }
            let err = std::io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) => wait_ready(fd, libc::POLLOUT, deadline)?,
                _ => return Err(FrameError::Io(err)),
            }
        }
    }

    /// Let receives poll (non-blocking `recvmsg`, `how` between tries)
    /// for up to `d` before they sleep.
    ///
    /// Why: a round trip where both sides sleep costs two wake-ups, each
    /// tens of microseconds on a virtual CPU that halted; a tool call
    /// usually answers within a few microseconds. Which [`SpinWait`]: a
    /// yield hands the rest of the time slice to whatever else is runnable,
    /// on every poll; on a host loaded by other work that is milliseconds
    /// per receive (1,000 tool calls beside two busy loops: 3.5 ms per call
    /// with both sides yielding, 0.34 ms with the worker pausing instead;
    /// `scripts/bench ab` `--only contended`). The supervisor keeps
    /// yielding: on a busy `lackpy serve` what it yields to is other runs,
    /// and a pure spin there cost throughput (`scripts/soak --trivial`).
    pub fn set_spin(&mut self, d: std::time::Duration, how: SpinWait) {
        self.spin = d;
        self.spin_wait = how;
    }

    /// Poll (without sleeping) up to `d` for the socket to become readable
    /// (a message or a hang-up). Returns whether it did.
    pub fn spin_readable(&self, d: std::time::Duration, how: SpinWait) -> bool {
        let until = Instant::now() + d;
        loop {
            let mut pfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: `pfd` is one valid pollfd; zero timeout.
            if unsafe { libc::poll(&mut pfd, 1, 0) } > 0 {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            how.wait();
        }
    }

    /// Receive one seqpacket message into the internal buffer; returns its length.
    /// 0 means the peer closed.
    fn recv_chunk(&mut self, deadline: Option<Instant>) -> Result<usize, FrameError> {
        let fd = self.fd.as_raw_fd();
        let mut spin_until = (!self.spin.is_zero()).then(|| Instant::now() + self.spin);
        if deadline.is_some() && spin_until.is_none() {
            wait_ready(fd, libc::POLLIN, deadline)?;
        }
        let mut reset_seen = false;
        loop {
            let flags = libc::MSG_CMSG_CLOEXEC
                | if spin_until.is_some() {
                    libc::MSG_DONTWAIT
                } else {
                    0
                };
            let chunk = self.buf.as_mut_slice();
            let mut iov = iovec_of(chunk);
            let mut hdr = msghdr_of(&mut iov);
            // SAFETY: `hdr` points at one iovec describing `self.buf` (`chunk`), which
            // stays alive and unaliased for the duration of the call.
            let rc = unsafe { libc::recvmsg(fd, &mut hdr, flags) };
            if rc < 0 {
                let err = std::io::Error::last_os_error();
                match err.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EAGAIN) => {
                        match spin_until {
                            Some(t) if Instant::now() < t => self.spin_wait.wait(),
                            Some(_) => {
                                // Spun long enough: sleep until the message (or deadline).
                                spin_until = None;
                                if deadline.is_some() {
                                    wait_ready(fd, libc::POLLIN, deadline)?;
                                }
                            }
                            None => wait_ready(fd, libc::POLLIN, deadline)?,
                        }
                        continue;
                    }
                    // The peer closed while messages to it were unread
                    // (a worker that sent `Done` and exited). The kernel
                    // reports that once, before the messages the peer sent
                    // first, which are still queued: read on (the next
                    // receive gives them, then 0), or `Done` is lost and a
                    // finished run looks like a dead worker.
                    Some(libc::ECONNRESET) if !reset_seen => {
                        reset_seen = true;
                        continue;
                    }
                    Some(libc::ECONNRESET) => return Ok(0),
                    _ => return Err(FrameError::Io(err)),
                }
            }
            if hdr.msg_flags & libc::MSG_TRUNC != 0 {
                return Err(FrameError::Malformed("message larger than a chunk"));
            }
            if hdr.msg_flags & libc::MSG_CTRUNC != 0 || hdr.msg_controllen != 0 {
                return Err(FrameError::Malformed("unexpected ancillary data"));
            }
            return usize::try_from(rc).map_err(|_| FrameError::Malformed("negative length"));
        }
    }

    /// Receive one frame's payload (checked for size, not yet decoded).
    ///
    /// # Errors
    /// See [`FrameError`].
    pub fn recv_payload(&mut self, deadline: Option<Instant>) -> Result<Vec<u8>, FrameError> {
        match self.recv_first(deadline)? {
            First::Whole(n) => Ok(self.buf.as_slice()[PREFIX..n].to_vec()),
            First::Partial { n, len } => self.recv_rest(n, len, deadline),
        }
    }

    /// Receive a frame's first chunk into the buffer and check its prefix.
    fn recv_first(&mut self, deadline: Option<Instant>) -> Result<First, FrameError> {
        let n = self.recv_chunk(deadline)?;
        if n == 0 {
            return Err(FrameError::Closed);
        }
        if n < PREFIX {
            return Err(FrameError::Malformed(
                "first chunk shorter than the length prefix",
            ));
        }
        let b = self.buf.as_slice();
        let len = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
        if len > MAX_FRAME_BYTES {
            return Err(FrameError::TooLarge {
                len,
                max: MAX_FRAME_BYTES,
            });
        }
        let first = n - PREFIX;
        if first > len {
            return Err(FrameError::Malformed(
                "length prefix smaller than the payload",
            ));
        }
        if first == len {
            return Ok(First::Whole(n));
        }
        if n < CHUNK_BYTES {
            // A sender only continues after a full first chunk.
            return Err(FrameError::Malformed(
                "length prefix larger than the payload",
            ));
        }
        Ok(First::Partial { n, len })
    }

    /// The payload of a frame of `len` bytes whose first chunk (`n` bytes,
    /// prefix included) is in the buffer: the continuation chunks.
    fn recv_rest(
        &mut self,
        n: usize,
        len: usize,
        deadline: Option<Instant>,
    ) -> Result<Vec<u8>, FrameError> {
        let mut payload = Vec::with_capacity(len);
        payload.extend_from_slice(&self.buf.as_slice()[PREFIX..n]);
        while payload.len() < len {
            let m = self.recv_chunk(deadline)?;
            if m == 0 {
                return Err(FrameError::Truncated {
                    got: payload.len(),
                    len,
                });
            }
            if payload.len() + m > len {
                return Err(FrameError::Malformed(
                    "continuation overruns the announced length",
                ));
            }
            if m < CHUNK_BYTES && payload.len() + m < len {
                return Err(FrameError::Malformed("short continuation chunk"));
            }
            payload.extend_from_slice(&self.buf.as_slice()[..m]);
        }
        Ok(payload)
    }

    /// Receive and decode one frame.
    ///
    /// # Errors
    /// See [`FrameError`].
    pub fn recv<T: Decode<()>>(&mut self, deadline: Option<Instant>) -> Result<T, FrameError> {
        match self.recv_first(deadline)? {
            // The whole frame came in one chunk (the usual case): decode it
            // where it lies, without copying it out first.
            First::Whole(n) => decode(&self.buf.as_slice()[PREFIX..n]),
            First::Partial { n, len } => decode(&self.recv_rest(n, len, deadline)?),
        }
    }

    /// Whether a message arrives within `wait_ms` milliseconds (used to
    /// detect frames sent after `Done`); returns early, `false`, when the
    /// peer hangs up.
    pub fn has_pending(&self, wait_ms: i32) -> bool {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is one valid pollfd.
        let rc = unsafe { libc::poll(&mut pfd, 1, wait_ms) };
        if rc <= 0 || pfd.revents & libc::POLLIN == 0 {
            return false;
        }
        // POLLIN is also set at EOF; peek to tell a message from a hang-up.
        let mut byte = [0u8; 1];
        // SAFETY: peeking one byte into a valid 1-byte buffer.
        let n = unsafe {
            libc::recv(
                self.fd.as_raw_fd(),
                byte.as_mut_ptr().cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        n > 0
    }
}

/// What a frame's first chunk held.
enum First {
    /// The whole frame: the chunk's `n` bytes, prefix included.
    Whole(usize),
    /// The start of a frame of `len` payload bytes, `n` bytes of it (prefix
    /// included) in this chunk; continuation chunks follow.
    Partial { n: usize, len: usize },
}

/// Most descriptors one [`send_fds`] / [`recv_fds`] message carries.
pub const MAX_PASSED_FDS: usize = 4;

/// Control-message buffer big enough for [`MAX_PASSED_FDS`] descriptors
/// (u64 elements keep it aligned for `cmsghdr`).
type CmsgBuf = [u64; 8];

/// An iovec over `buf`, to receive into.
fn iovec_of(buf: &mut [u8]) -> libc::iovec {
    libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    }
}

/// A message header with one iovec, no name and no control data (yet).
fn msghdr_of(iov: &mut libc::iovec) -> libc::msghdr {
    // SAFETY: an all-zero msghdr is a valid "no name, no control" header.
    let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
    hdr.msg_iov = iov;
    hdr.msg_iovlen = 1;
    hdr
}

/// Send one seqpacket message `bytes` with `fds` attached (`SCM_RIGHTS`).
/// Used only between the supervisor and its zygote (see `crate::zygote`).
///
/// # Errors
/// The `sendmsg` errno; `EINVAL` for more than [`MAX_PASSED_FDS`] descriptors.
pub fn send_fds(sock: RawFd, bytes: &[u8], fds: &[RawFd]) -> std::io::Result<()> {
    if fds.len() > MAX_PASSED_FDS {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut cbuf: CmsgBuf = [0; 8];
    // At most MAX_PASSED_FDS descriptors (checked above): a few bytes.
    let fd_bytes = u32::try_from(std::mem::size_of_val(fds))
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // SAFETY: msghdr is plain data; every field we rely on is set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        msg.msg_control = cbuf.as_mut_ptr().cast();
        // SAFETY: CMSG_SPACE only computes a size.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(fd_bytes) } as _;
        // SAFETY: msg_control points at `cbuf`, which is larger than
        // CMSG_SPACE(4 * MAX_PASSED_FDS) and aligned for cmsghdr; the header
        // and data written stay inside it.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(fd_bytes) as _;
            std::ptr::copy_nonoverlapping(
                fds.as_ptr().cast::<u8>(),
                libc::CMSG_DATA(c),
                fd_bytes as usize,
            );
        }
    }
    loop {
        // SAFETY: `msg` points at live buffers (iov, cbuf) for the call.
        let rc = unsafe { libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) };
        if rc >= 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Receive one seqpacket message into `buf` with up to [`MAX_PASSED_FDS`]
/// attached descriptors (made close-on-exec). Returns the byte count (0 =
/// the peer closed) and the descriptors. A truncated message or truncated
/// control data is an error (the descriptors that did arrive are closed).
/// With a deadline, waits at most until then.
///
/// # Errors
/// The `recvmsg` errno, `EMSGSIZE` on truncation, `ETIMEDOUT` at the deadline.
pub fn recv_fds(
    sock: RawFd,
    buf: &mut [u8],
    deadline: Option<Instant>,
) -> std::io::Result<(usize, Vec<OwnedFd>)> {
    use std::os::fd::FromRawFd;
    if deadline.is_some() {
        match wait_ready(sock, libc::POLLIN, deadline) {
            Ok(()) => {}
            Err(FrameError::Timeout) => {
                return Err(std::io::Error::from_raw_os_error(libc::ETIMEDOUT))
            }
            Err(FrameError::Io(e)) => return Err(e),
            Err(_) => return Err(std::io::Error::from_raw_os_error(libc::EIO)),
        }
    }
    let mut cbuf: CmsgBuf = [0; 8];
    let mut iov = iovec_of(buf);
    let mut msg = msghdr_of(&mut iov);
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of::<CmsgBuf>() as _;
    let n = loop {
        // SAFETY: `msg` points at live buffers (iov, cbuf) for the call.
        let rc = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if let Ok(n) = usize::try_from(rc) {
            break n;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    };
    let mut fds = Vec::new();
    // SAFETY: walking the control messages the kernel wrote into `cbuf`
    // (msg_controllen was updated to the bytes written); each SCM_RIGHTS
    // payload holds whole ints, which we take ownership of exactly once.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c);
                let len = (*c).cmsg_len as usize - (data as usize - c as usize);
                for i in 0..len / std::mem::size_of::<RawFd>() {
                    let fd = std::ptr::read_unaligned(data.cast::<RawFd>().add(i));
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if msg.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 || fds.len() > MAX_PASSED_FDS {
        return Err(std::io::Error::from_raw_os_error(libc::EMSGSIZE));
    }
    Ok((n, fds))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::undocumented_unsafe_blocks)]
mod tests {
    use super::*;
    use lackpy_policy::wire::{
        Data, FlatData, FromWorker, Limits, ToWorker, ToolFailure, PROTOCOL_VERSION,
    };
    use std::time::Duration;

    fn pair() -> (Channel, Channel) {
        let (a, b) = socketpair().unwrap();
        (Channel::new(a), Channel::new(b))
    }

    #[test]
    fn wire_elements_fit_the_claim_bound() {
        use lackpy_policy::wire::{Node, ToolSig};
        for size in [
            std::mem::size_of::<Node>(),
            std::mem::size_of::<FlatData>(),
            std::mem::size_of::<(String, FlatData)>(),
            std::mem::size_of::<ToolSig>(),
            std::mem::size_of::<String>(),
        ] {
            assert!(size <= MAX_WIRE_ELEM, "{size}");
        }
    }

    /// A value of many small items, well under the frame cap on the wire
    /// but over the decoder's memory limit, is refused by the sender with
    /// `TooManyValues` (the peer would have called it undecodable); one
    /// that fits goes through.
    #[test]
    fn frames_the_peer_cannot_decode_are_never_sent() {
        let (mut a, mut b) = pair();
        let t = std::thread::spawn(move || {
            let got: ToWorker = b.recv(None).unwrap();
            got
        });
        let many = |n: usize| ToWorker::ToolResult {
            id: 1,
            result: Ok(Data::List(vec![Data::None; n]).to_flat()),
        };
        let e = a.send(&many(600_000), None).unwrap_err();
        assert!(matches!(e, FrameError::TooManyValues { .. }), "{e}");
        assert!(matches!(
            encode(&many(600_000)),
            Err(FrameError::TooManyValues { .. })
        ));
        a.send(&many(400_000), None).unwrap();
        assert_eq!(t.join().unwrap(), many(400_000));
    }

    #[test]
    fn roundtrip_edge_values() {
        let (mut a, mut b) = pair();
        let big = Data::Str("x".repeat(3 * CHUNK_BYTES + 17));
        let msgs = vec![
            ToWorker::Run {
                protocol: PROTOCOL_VERSION,
                program: "1+1\n".into(),
                tools: vec![],
                limits: Limits::default(),
                globals: vec![("x".into(), Data::Int(41).to_flat())],
                want_globals: true,
            },
            ToWorker::ToolResult {
                id: u64::MAX,
                result: Ok(big.to_flat()),
            },
            ToWorker::ToolResult {
                id: 0,
                result: Err(ToolFailure {
                    type_name: "FileNotFound".into(),
                    message: "é\0".into(),
                }),
            },
            ToWorker::ToolResult {
                id: 1,
                result: Ok(FlatData::default()),
            },
        ];
        let sender = std::thread::spawn(move || {
            for m in &msgs {
                a.send(m, Some(Instant::now() + Duration::from_secs(5)))
                    .unwrap();
            }
            msgs
        });
        let mut got = Vec::new();
        for _ in 0..4 {
            got.push(
                b.recv::<ToWorker>(Some(Instant::now() + Duration::from_secs(5)))
                    .unwrap(),
            );
        }
        assert_eq!(sender.join().unwrap(), got);
    }

    /// Messages covering every variant, encoded: if this changes, a message
    /// enum changed shape and `PROTOCOL_VERSION` must be bumped (then update
    /// the golden string).
    fn golden_messages() -> Vec<u8> {
        use lackpy_policy::wire::{ErrorInfo, ErrorKind, Node, Outcome, ToolSig, WireError};
        let d = Data::Dict(vec![(
            Data::Str("k".into()),
            Data::List(vec![
                Data::None,
                Data::Bool(true),
                Data::Int(-2),
                Data::BigInt("12345678901234567890".into()),
                Data::Float(0.5),
                Data::Tuple(vec![]),
                Data::Set(vec![]),
            ]),
        )]);
        let mut out = Vec::new();
        let to = [
            ToWorker::Run {
                protocol: PROTOCOL_VERSION,
                program: "p".into(),
                tools: vec![ToolSig {
                    name: "t".into(),
                    args: vec!["a".into()],
                }],
                limits: Limits::default(),
                globals: vec![("g".into(), FlatData(vec![Node::Int(7)]))],
                want_globals: true,
            },
            ToWorker::ToolResult {
                id: 1,
                result: Ok(d.to_flat()),
            },
            ToWorker::ToolResult {
                id: 2,
                result: Err(ToolFailure {
                    type_name: "T".into(),
                    message: "m".into(),
                }),
            },
        ];
        for m in &to {
            out.extend(encode(m).unwrap());
        }
        let from = [
            FromWorker::Ready {
                protocol: PROTOCOL_VERSION,
            },
            FromWorker::SetupFailed {
                step: "s".into(),
                errno: 1,
                detail: "d".into(),
            },
            FromWorker::ToolCall {
                id: 1,
                name: "t".into(),
                args: vec![FlatData(vec![Node::Int(1)])],
                kwargs: vec![("k".into(), FlatData(vec![Node::None]))],
            },
            FromWorker::Stdout("o".into()),
            FromWorker::Done(Outcome {
                value: Some(FlatData(vec![Node::Bool(false)])),
                repr: Some("False".into()),
                error: Some(WireError(ErrorInfo {
                    kind: ErrorKind::Limit,
                    type_name: "fuel".into(),
                    message: "m".into(),
                    line: Some(1),
                    col: None,
                    hint: Some("h".into()),
                })),
                fuel_used: 3,
                globals: vec![("g".into(), FlatData(vec![Node::Int(8)]))],
                skipped_globals: vec!["r".into()],
            }),
        ];
        for m in &from {
            out.extend(encode(m).unwrap());
        }
        out
    }

    #[test]
    fn golden_encoding_pins_the_protocol() {
        let hex: String = golden_messages()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(PROTOCOL_VERSION, 3, "protocol bumped: update GOLDEN below");
        const GOLDEN: &str = "00030170010174010161fb1027fc80f0fa02fc00000010fc00001000fb1027fc00008000fc0000010064fc0000000401016701020e010101000a080105016b060700010102030314313233343536373839303132333435363738393004000000000000e03f070009000102010154016d0003010173020164020101740101020201016b010003016f0401010100010546616c73650102046675656c016d01010001016803010167010210010172";
        assert_eq!(
            hex, GOLDEN,
            "a message enum changed shape: bump PROTOCOL_VERSION"
        );
    }

    /// `send` (encoded in place, in the channel's reused buffer) puts on
    /// the wire exactly the chunks `send_payload(encode(..))` does, at and
    /// around the chunk boundaries, and a large frame does not disturb the
    /// small ones after it; `recv` decodes each back.
    #[test]
    fn in_place_send_matches_the_framing() {
        let (mut a, mut b) = pair();
        let (mut c, mut d) = pair();
        let chunks = |rx: &mut Channel| {
            let mut got = Vec::new();
            let first = rx.recv_chunk(None).unwrap();
            let b = rx.buf.as_slice();
            let len = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
            let mut seen = first - PREFIX;
            got.push(b[..first].to_vec());
            while seen < len {
                let m = rx.recv_chunk(None).unwrap();
                seen += m;
                got.push(rx.buf.as_slice()[..m].to_vec());
            }
            got
        };
        let mut sizes: Vec<usize> = (CHUNK_BYTES - 12..CHUNK_BYTES + 4).collect();
        sizes.extend([0, 1, 2 * CHUNK_BYTES - 9, 300_000, 5]);
        for n in sizes {
            let msg = FromWorker::Stdout("s".repeat(n));
            let t = std::thread::spawn(move || {
                a.send(&msg, None).unwrap();
                c.send_payload(&encode(&msg).unwrap(), None).unwrap();
                a.send(&msg, None).unwrap();
                (a, c, msg)
            });
            let mine = chunks(&mut b);
            let theirs = chunks(&mut d);
            assert_eq!(mine, theirs, "{n}-byte string");
            let got: FromWorker = b.recv(None).unwrap();
            let (a2, c2, msg) = t.join().unwrap();
            assert_eq!(got, msg, "{n}-byte string");
            (a, c) = (a2, c2);
        }
        // A large frame's buffer is not kept.
        assert!(a.out.capacity() <= KEPT_SEND_BYTES);
    }

    #[test]
    fn eight_mib_frame() {
        let (mut a, mut b) = pair();
        let s = "y".repeat(8 * 1024 * 1024);
        let msg = FromWorker::Stdout(s.clone());
        let t = std::thread::spawn(move || a.send(&msg, None).unwrap());
        let got: FromWorker = b
            .recv(Some(Instant::now() + Duration::from_secs(10)))
            .unwrap();
        t.join().unwrap();
        assert_eq!(got, FromWorker::Stdout(s));
    }

    #[test]
    fn oversized_prefix_rejected_before_alloc() {
        let (mut a, mut b) = pair();
        a.send_raw(&u32::MAX.to_le_bytes(), None).unwrap();
        assert!(
            matches!(b.recv_payload(None), Err(FrameError::TooLarge { len, .. }) if len == u32::MAX as usize)
        );
    }

    #[test]
    fn oversized_encode_refused() {
        let s = "z".repeat(MAX_FRAME_BYTES + 1);
        assert!(encode(&FromWorker::Stdout(s)).is_err());
    }

    #[test]
    fn hostile_framing() {
        let (mut a, mut b) = pair();
        // Prefix says 10, payload has 3 and no continuation follows: refused.
        a.send_raw(&[10, 0, 0, 0, 1, 2, 3], None).unwrap();
        assert!(matches!(
            b.recv_payload(None),
            Err(FrameError::Malformed(_))
        ));
        // Prefix smaller than payload.
        a.send_raw(&[1, 0, 0, 0, 1, 2, 3], None).unwrap();
        assert!(matches!(
            b.recv_payload(None),
            Err(FrameError::Malformed(_))
        ));
        // Too short for a prefix.
        a.send_raw(&[1, 0], None).unwrap();
        assert!(matches!(
            b.recv_payload(None),
            Err(FrameError::Malformed(_))
        ));
        // Oversized single message.
        a.send_raw(&vec![0u8; CHUNK_BYTES + 1], None).unwrap();
        assert!(matches!(
            b.recv_payload(None),
            Err(FrameError::Malformed(_))
        ));
        // Garbage bincode.
        a.send_payload(&[0xff; 9], None).unwrap();
        assert!(matches!(
            b.recv::<FromWorker>(None),
            Err(FrameError::Decode(_))
        ));
        // Trailing bytes.
        let mut p = encode(&FromWorker::Ready { protocol: 1 }).unwrap();
        p.push(0);
        a.send_payload(&p, None).unwrap();
        assert!(matches!(
            b.recv::<FromWorker>(None),
            Err(FrameError::Malformed(_))
        ));
        // Full first chunk, then close: truncated.
        let first = full_first_chunk();
        a.send_raw(&first, None).unwrap();
        drop(a);
        assert!(matches!(
            b.recv_payload(None),
            Err(FrameError::Truncated { .. })
        ));
        assert!(matches!(b.recv_payload(None), Err(FrameError::Closed)));
    }

    /// A peer that sends a frame and closes with a message to it unread:
    /// the kernel's ECONNRESET comes before the frame, which must still be
    /// received (a worker's `Done` was lost so, and the finished run was
    /// reported as a dead worker, exit status 0).
    #[test]
    fn a_frame_sent_before_a_reset_is_received() {
        for spin in [
            std::time::Duration::ZERO,
            std::time::Duration::from_micros(50),
        ] {
            let (mut a, mut b) = pair();
            b.set_spin(spin, SpinWait::Yield);
            b.send(
                &ToWorker::ToolResult {
                    id: 1,
                    result: Ok(FlatData::default()),
                },
                None,
            )
            .unwrap();
            a.send(&FromWorker::Ready { protocol: 7 }, None).unwrap();
            drop(a);
            let deadline = Some(Instant::now() + std::time::Duration::from_secs(5));
            assert!(matches!(
                b.recv::<FromWorker>(deadline),
                Ok(FromWorker::Ready { protocol: 7 })
            ));
            assert!(matches!(
                b.recv::<FromWorker>(deadline),
                Err(FrameError::Closed)
            ));
        }
    }

    /// A full first chunk announcing a two-chunk frame.
    fn full_first_chunk() -> Vec<u8> {
        let mut first = u32::try_from(CHUNK_BYTES * 2)
            .unwrap()
            .to_le_bytes()
            .to_vec();
        first.resize(CHUNK_BYTES, 0);
        first
    }

    #[test]
    fn stalled_peer_times_out() {
        let (mut a, mut b) = pair();
        let first = full_first_chunk();
        a.send_raw(&first, None).unwrap();
        let t0 = Instant::now();
        let r = b.recv_payload(Some(Instant::now() + Duration::from_millis(100)));
        assert!(matches!(r, Err(FrameError::Timeout)));
        assert!(t0.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn huge_declared_vec_does_not_allocate() {
        // A bincode Vec<Node> claiming 2^60 elements must fail on the limit.
        let mut payload = vec![3u8]; // FromWorker::Stdout? no: use ToolCall variant index 2
        payload[0] = 2;
        payload.push(1); // id
        payload.push(0); // name: empty string
        payload.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0x10]); // args len varint u64 2^60
        assert!(decode::<FromWorker>(&payload).is_err());
    }

    #[test]
    fn pending_detects_messages_not_eof() {
        let (mut a, b) = pair();
        assert!(!b.has_pending(0));
        a.send(&FromWorker::Ready { protocol: 1 }, None).unwrap();
        assert!(b.has_pending(0));
        let (a2, b2) = pair();
        drop(a2);
        let t0 = Instant::now();
        assert!(!b2.has_pending(1000));
        assert!(t0.elapsed() < Duration::from_millis(500));
    }
}
