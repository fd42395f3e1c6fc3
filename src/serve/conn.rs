//! One client connection of `lackpy serve`: admission (peer credentials,
//! then the connection caps), the MCP session, and the idle timeout.
//!
//! The socket is shared (`Arc<UnixStream>`) between the MCP transport's
//! reader and writer and this module, which can therefore end a session
//! from outside (`shutdown(SHUT_RD)`: the transport reads EOF, cancels the
//! connection's runs and ends) and still write one last JSON-RPC error line
//! saying why.

use super::{Refused, Shared};
use serde_json::json;
use std::io;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UnixStream;

/// JSON-RPC error code of a connection refused by peer credentials.
pub const CODE_NOT_ALLOWED: i64 = -32001;
/// JSON-RPC error code of a connection refused by a connection cap.
pub const CODE_OVER_CAP: i64 = -32002;
/// JSON-RPC error code of a connection closed by the idle timeout.
pub const CODE_IDLE: i64 = -32003;

/// How long the farewell line may take to write: a peer that does not read
/// must not hold the task.
const FAREWELL_TIMEOUT: Duration = Duration::from_secs(1);

/// When a connection was last active, and whether a run is in flight on it.
#[derive(Debug)]
pub struct Activity {
    epoch: Instant,
    last_ms: AtomicU64,
    busy: AtomicUsize,
}

impl Default for Activity {
    fn default() -> Self {
        Activity {
            epoch: Instant::now(),
            last_ms: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
        }
    }
}

impl Activity {
    /// Something happened on the connection now.
    pub fn touch(&self) {
        let ms = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.fetch_max(ms, Ordering::Relaxed);
    }

    /// Time since the last activity.
    pub fn idle_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.epoch.elapsed().saturating_sub(last)
    }

    /// A run started; it holds the connection active until the guard drops.
    pub fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::SeqCst);
        self.touch();
        Busy(self.clone())
    }

    fn is_busy(&self) -> bool {
        self.busy.load(Ordering::SeqCst) > 0
    }
}

/// A run in flight on a connection (see [`Activity::busy`]).
pub struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The transport's read half: reads the shared socket, marks activity.
struct Reader {
    sock: Arc<UnixStream>,
    activity: Arc<Activity>,
}

impl AsyncRead for Reader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            ready!(self.sock.poll_read_ready(cx))?;
            match self.sock.try_read(buf.initialize_unfilled()) {
                Ok(n) => {
                    if n > 0 {
                        self.activity.touch();
                    }
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

/// The transport's write half. Its shutdown only flushes: the connection
/// handler closes the socket itself, after an optional farewell line.
struct Writer {
    sock: Arc<UnixStream>,
    activity: Arc<Activity>,
}

impl AsyncWrite for Writer {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.sock.poll_write_ready(cx))?;
            match self.sock.try_write(data) {
                Ok(n) => {
                    self.activity.touch();
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Write one JSON-RPC error line (`id: null`) and close the socket.
async fn farewell(sock: &UnixStream, code: i64, message: &str, data: serde_json::Value) {
    let line = json!({
        "jsonrpc": "2.0", "id": null,
        "error": {"code": code, "message": message, "data": data}
    });
    let bytes = format!("{line}\n").into_bytes();
    let write = async {
        let mut done = 0;
        while done < bytes.len() {
            if sock.writable().await.is_err() {
                return;
            }
            match sock.try_write(&bytes[done..]) {
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return,
            }
        }
    };
    let _ = tokio::time::timeout(FAREWELL_TIMEOUT, write).await;
    let _ = nix::sys::socket::shutdown(sock.as_raw_fd(), nix::sys::socket::Shutdown::Both);
}

/// How often the idle watchdog looks: a quarter of the timeout, between
/// 50 ms and 5 s (a connection ends at most that late).
fn tick(idle: Duration) -> Duration {
    (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(5))
}

/// Serve one connection: authenticate, check the caps, then one MCP
/// session until the peer closes it or it idles out.
pub async fn serve_connection(stream: UnixStream, shared: Arc<Shared>) {
    let cred = match stream.peer_cred() {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!("peer credentials unavailable: {e}");
            return;
        }
    };
    let (uid, gid) = (cred.uid(), cred.gid());
    let activity = Arc::new(Activity::default());
    activity.touch();
    let s = shared.clone();
    let a = activity.clone();
    let admitted = match tokio::task::spawn_blocking(move || s.admit(uid, gid, a)).await {
        Ok(r) => r,
        Err(_) => Err(Refused::not_allowed(
            "lackpy serve: internal error admitting the client".to_string(),
        )),
    };
    let (backend, slot) = match admitted {
        Ok(x) => x,
        Err(refused) => {
            tracing::warn!(uid, gid, reason = refused.reason(), "refused connection");
            shared.metrics.count_refusal(&refused);
            farewell(&stream, refused.code(), &refused.message, refused.data()).await;
            return;
        }
    };
    let idle = Duration::from_secs(slot.idle_timeout_seconds);
    let sock = Arc::new(stream);
    let reader = Reader {
        sock: sock.clone(),
        activity: activity.clone(),
    };
    let writer = Writer {
        sock: sock.clone(),
        activity: activity.clone(),
    };
    // The idle watchdog: no bytes either way and no run in flight for
    // `idle` ends the session (the transport reads EOF). It records the
    // timeout before it shuts the socket's read side: the session can see
    // EOF and end before the watchdog's task has finished, so whether the
    // task finished cannot say whether it timed the connection out (that
    // race closed idle connections without their farewell line).
    let (dog_sock, dog_activity) = (sock.clone(), activity.clone());
    let idled_out = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let dog_idled_out = idled_out.clone();
    let watchdog = tokio::spawn(async move {
        loop {
            tokio::time::sleep(tick(idle)).await;
            if !dog_activity.is_busy() && dog_activity.idle_for() >= idle {
                dog_idled_out.store(true, Ordering::SeqCst);
                let _ = nix::sys::socket::shutdown(
                    dog_sock.as_raw_fd(),
                    nix::sys::socket::Shutdown::Read,
                );
                return;
            }
        }
    });
    if let Err(e) = crate::mcp::serve(backend, reader, writer).await {
        tracing::debug!("session ended: {e:#}");
    }
    watchdog.abort();
    let timed_out = idled_out.load(Ordering::SeqCst);
    if timed_out {
        shared.metrics.idle_closed.fetch_add(1, Ordering::Relaxed);
        tracing::info!(uid, gid, "closed an idle connection");
        let message = format!(
            "lackpy serve: connection closed after {} s without a request (serve.idle_timeout_seconds)",
            idle.as_secs()
        );
        farewell(
            &sock,
            CODE_IDLE,
            &message,
            json!({"limit": "serve.idle_timeout_seconds", "seconds": idle.as_secs()}),
        )
        .await;
    }
    drop(slot);
}
