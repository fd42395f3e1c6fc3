//! `lackpy mcp`: lackpy as an MCP stdio server (the `rmcp` crate).
//!
//! - [`backend`]: the one trait the protocol layer talks to;
//! - [`server`]: `tools/list` and `tools/call` over a backend;
//! - [`tools`]: tool names, schemas, descriptions and annotations;
//! - [`render`]: the bounded text rendering of results;
//! - [`session`]: notebook-style variables carried between cells;
//! - [`real`]: the backend over config, validator and supervisor.
//!
//! Stdout carries protocol frames and nothing else: before serving, the
//! protocol streams are moved to private descriptors and fds 0/1 become
//! `/dev/null` and stderr, so a stray print (or a child that inherits fd 1)
//! can never corrupt the stream. EOF on stdin cancels every in-flight run and
//! ends the server.
//!
//! - [`flow`]: the session reads requests only while it can answer them (at
//!   most 64 handled at once, none while a reply waits for the peer to read;
//!   a reply waiting 60 s ends the session).

pub mod backend;
pub mod flow;
pub mod real;
pub mod render;
pub mod server;
pub mod session;
pub mod tools;

#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;

use anyhow::Context as _;
use rmcp::ServiceExt;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::watch;

/// Serve one MCP session on `(read, write)` until the peer closes it.
///
/// EOF (or a read error) on `read` flips the shutdown signal at once, so
/// in-flight runs are cancelled and their workers killed before the
/// transport drains.
///
/// # Errors
/// The MCP handshake failed or the service task panicked.
pub async fn serve<R, W>(
    backend: Arc<dyn backend::Backend>,
    read: R,
    write: W,
) -> anyhow::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = watch::channel(false);
    // Requests are read only while the session can answer them (flow.rs).
    let flow = flow::Flow::new();
    let read = EofSignal {
        inner: flow::FlowRead::new(read, flow.clone()),
        tx: Some(tx),
    };
    let write = flow::FlowWrite::new(write, flow.clone());
    let server = flow::Bounded::new(server::LackpyServer::new(backend.clone(), rx.clone()), flow);
    // The backend is told to kill in-flight workers exactly once: as soon as
    // the input closes, or when the session ends for any other reason.
    let stop = Arc::new(std::sync::Once::new());
    let eof_seen = rx.clone();
    let mut eof = rx;
    let (b, s) = (backend.clone(), stop.clone());
    let killer = tokio::spawn(async move {
        if eof.wait_for(|v| *v).await.is_ok() {
            tracing::debug!("transport closed: cancelling in-flight runs");
            let _ = tokio::task::spawn_blocking(move || s.call_once(|| b.shutdown())).await;
        }
    });
    let outcome = async {
        let transport = rmcp::transport::async_rw::AsyncRwTransport::new_server(read, write)
            // FlowRead enforces MAX_REQUEST_LINE and answers; this is a backstop.
            .with_max_line_length(flow::MAX_REQUEST_LINE + 4096);
        let running = match server.serve(transport).await {
            Ok(r) => r,
            // The peer closed its end before initializing: a clean end.
            Err(_) if *eof_seen.borrow() => return Ok(()),
            Err(e) => return Err(anyhow::Error::new(e).context("MCP initialization failed")),
        };
        let reason = running.waiting().await.context("MCP service task failed")?;
        tracing::debug!(?reason, "MCP session ended");
        Ok(())
    }
    .await;
    killer.abort();
    let _ = tokio::task::spawn_blocking(move || stop.call_once(|| backend.shutdown())).await;
    outcome
}

/// Give freed heap back to the kernel every `every`, on a blocking thread
/// (see `lackpy_supervisor::spawn::release_free_memory`): a long-running
/// server's runs allocate from many threads' arenas, and without this its
/// RSS creeps with fragmentation. Abort the handle to stop it.
pub fn spawn_heap_trimmer(every: std::time::Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let _ =
                tokio::task::spawn_blocking(lackpy_supervisor::spawn::release_free_memory).await;
        }
    })
}

/// Serve on the process's stdin/stdout; see the module docs for how stdout
/// is kept clean.
///
/// # Errors
/// The standard streams could not be set up, or [`serve`] failed.
pub async fn serve_stdio(backend: Arc<dyn backend::Backend>) -> anyhow::Result<()> {
    let (read, write) = private_stdio().context("setting up the stdio transport")?;
    serve(backend, read, write).await
}

/// Reader half of the private stdio transport.
enum Reader {
    Pipe(tokio::net::unix::pipe::Receiver),
    Socket(SocketIo),
    File(tokio::fs::File),
}

/// Writer half of the private stdio transport.
enum Writer {
    Pipe(tokio::net::unix::pipe::Sender),
    Socket(SocketIo),
    File(tokio::fs::File),
}

/// Move the protocol streams off fds 0 and 1: duplicate them (close-on-exec),
/// then point fd 0 at `/dev/null` and fd 1 at stderr. FIFOs (how Python and
/// Rust MCP clients launch servers) are reopened non-blocking for the
/// reactor, sockets (Node's `child_process`, hence the TypeScript SDK's
/// clients) are driven by the reactor too (see [`SocketIo`]); anything else
/// goes through the blocking pool.
fn private_stdio() -> io::Result<(Reader, Writer)> {
    let input: OwnedFd = io::stdin().as_fd().try_clone_to_owned()?;
    let output: OwnedFd = io::stdout().as_fd().try_clone_to_owned()?;
    let devnull = std::fs::File::open("/dev/null")?;
    nix::unistd::dup2_stdin(&devnull).map_err(io::Error::from)?;
    nix::unistd::dup2_stdout(io::stderr()).map_err(io::Error::from)?;
    let reader = match (reopen_fifo(&input, false), is_socket(&input)) {
        (Some(fd), _) => Reader::Pipe(tokio::net::unix::pipe::Receiver::from_owned_fd(fd)?),
        (None, true) => Reader::Socket(SocketIo::new(input)?),
        (None, false) => Reader::File(tokio::fs::File::from_std(std::fs::File::from(input))),
    };
    let writer = match (reopen_fifo(&output, true), is_socket(&output)) {
        (Some(fd), _) => Writer::Pipe(tokio::net::unix::pipe::Sender::from_owned_fd(fd)?),
        (None, true) => Writer::Socket(SocketIo::new(output)?),
        (None, false) => Writer::File(tokio::fs::File::from_std(std::fs::File::from(output))),
    };
    Ok((reader, writer))
}

/// Whether `fd` is a socket.
fn is_socket(fd: &OwnedFd) -> bool {
    use std::os::unix::fs::FileTypeExt;
    fd.try_clone()
        .ok()
        .and_then(|fd| std::fs::File::from(fd).metadata().ok())
        .is_some_and(|m| m.file_type().is_socket())
}

/// A stream socket given as stdin or stdout, driven by the reactor.
///
/// A socket cannot be reopened through `/proc` like a FIFO, and setting
/// `O_NONBLOCK` on it would change the open file description the client (or
/// a wrapper between it and us) may share. So the descriptor stays blocking:
/// readiness comes from epoll and every `recv`/`send` passes `MSG_DONTWAIT`,
/// which never blocks whatever the descriptor's flags. Without this, each
/// read and each write of a Node client's stream is a hop through tokio's
/// blocking pool.
struct SocketIo(tokio::io::unix::AsyncFd<OwnedFd>);

impl SocketIo {
    fn new(fd: OwnedFd) -> io::Result<Self> {
        // SAFETY: `register` asks that the descriptor stay open and name the
        // same file description for as long as the `AsyncFd` lives. The
        // `AsyncFd` owns this `OwnedFd` (a private duplicate of fd 0 or 1):
        // nothing else can close it, and `as_raw_fd` always returns it.
        let afd = unsafe { tokio::io::unix::AsyncFd::register(fd) }.map_err(io::Error::from)?;
        Ok(Self(afd))
    }

    fn poll_read(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        use nix::sys::socket::{recv, MsgFlags};
        use std::os::fd::AsRawFd;
        loop {
            let mut guard = std::task::ready!(self.0.poll_read_ready(cx))?;
            let room = buf.initialize_unfilled();
            match guard.try_io(|fd| {
                recv(fd.as_raw_fd(), room, MsgFlags::MSG_DONTWAIT).map_err(io::Error::from)
            }) {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => {}
            }
        }
    }

    fn poll_write(&self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        use nix::sys::socket::{send, MsgFlags};
        use std::os::fd::AsRawFd;
        loop {
            let mut guard = std::task::ready!(self.0.poll_write_ready(cx))?;
            let flags = MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL;
            match guard.try_io(|fd| send(fd.as_raw_fd(), data, flags).map_err(io::Error::from)) {
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Ok(r) => return Poll::Ready(r),
                Err(_would_block) => {}
            }
        }
    }
}

/// If `fd` is a FIFO, open it again through `/proc/self/fd` with
/// `O_NONBLOCK` (its own open file description, so the flag stays private).
fn reopen_fifo(fd: &OwnedFd, write: bool) -> Option<OwnedFd> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let meta = std::fs::File::from(fd.try_clone().ok()?).metadata().ok()?;
    if !meta.file_type().is_fifo() {
        return None;
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.read(!write)
        .write(write)
        .custom_flags(libc::O_NONBLOCK);
    opts.open(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .ok()
        .map(OwnedFd::from)
}

impl AsyncRead for Reader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Reader::Pipe(p) => Pin::new(p).poll_read(cx, buf),
            Reader::Socket(s) => s.poll_read(cx, buf),
            Reader::File(f) => Pin::new(f).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Writer {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Writer::Pipe(p) => Pin::new(p).poll_write(cx, data),
            Writer::Socket(s) => s.poll_write(cx, data),
            Writer::File(f) => Pin::new(f).poll_write(cx, data),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Writer::Pipe(p) => Pin::new(p).poll_flush(cx),
            Writer::Socket(_) => Poll::Ready(Ok(())),
            Writer::File(f) => Pin::new(f).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Writer::Pipe(p) => Pin::new(p).poll_shutdown(cx),
            Writer::Socket(_) => Poll::Ready(Ok(())),
            Writer::File(f) => Pin::new(f).poll_shutdown(cx),
        }
    }
}

/// A reader that flips a watch to `true` at EOF or on a read error.
struct EofSignal<R> {
    inner: R,
    tx: Option<watch::Sender<bool>>,
}

impl<R: AsyncRead + Unpin> AsyncRead for EofSignal<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let room = buf.remaining() > 0;
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(res) = &r {
            let at_eof = res.is_err() || (room && buf.filled().len() == before);
            if at_eof {
                if let Some(tx) = this.tx.take() {
                    tx.send_replace(true);
                }
            }
        }
        r
    }
}
