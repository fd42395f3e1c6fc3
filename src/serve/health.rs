//! Health checks and metrics over HTTP: `--metrics-socket PATH` (unix) and
//! `--metrics-listen HOST:PORT` (TCP) answer the same four paths:
//!
//! - `GET /healthz` (and the older `/health`): `200 ok` while the process
//!   answers at all (liveness);
//! - `GET /readyz`: `200` when the server should get traffic — not draining,
//!   every workspace's worker pool created and holding a warm worker —
//!   else `503` with the reason (readiness; SIGTERM fails it at once);
//! - `GET /metrics`: the Prometheus text ([`super::metrics`]);
//! - anything else: `404`.
//!
//! These listeners carry no client data and need no token; bind them to
//! loopback or a pod-internal port, never to the public interface.

use super::Shared;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One answer: status, content type, body.
pub struct Answer {
    /// HTTP status.
    pub status: StatusCode,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
}

/// The answer for `method path`.
pub fn answer(shared: &Shared, method: &str, path: &str) -> Answer {
    let text = |status, body: String| Answer {
        status,
        content_type: "text/plain; charset=utf-8",
        body,
    };
    if method != "GET" && method != "HEAD" {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            "only GET is served here\n".into(),
        );
    }
    // Ignore a query string.
    let path = path.split('?').next().unwrap_or(path);
    match path {
        "/healthz" | "/health" => text(StatusCode::OK, "ok\n".into()),
        "/readyz" => match shared.readiness() {
            Ok(detail) => text(StatusCode::OK, format!("ready\n{detail}\n")),
            Err(why) => text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("not ready: {why}\n"),
            ),
        },
        "/metrics" => {
            let cfg = shared.config();
            Answer {
                status: StatusCode::OK,
                content_type: "text/plain; version=0.0.4",
                body: shared
                    .metrics
                    .render(shared.pool_ready(), cfg.max_in_flight),
            }
        }
        _ => text(
            StatusCode::NOT_FOUND,
            "not found; this listener serves /healthz, /readyz and /metrics\n".into(),
        ),
    }
}

/// Largest request head read on the unix metrics socket.
const HEAD_MAX: usize = 4096;
/// How long a metrics request may take to arrive.
const HEAD_TIMEOUT: Duration = Duration::from_secs(2);

/// Serve the unix metrics socket: one HTTP/1.0 request per connection.
pub async fn serve_unix(listener: tokio::net::UnixListener, shared: Arc<Shared>) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; HEAD_MAX];
            let mut n = 0;
            let read = async {
                while n < buf.len() {
                    match stream.read(&mut buf[n..]).await {
                        Ok(0) | Err(_) => break,
                        Ok(k) => {
                            n += k;
                            if buf[..n].windows(4).any(|w| w == b"\r\n\r\n")
                                || buf[..n].windows(2).any(|w| w == b"\n\n")
                            {
                                break;
                            }
                        }
                    }
                }
            };
            let _ = tokio::time::timeout(HEAD_TIMEOUT, read).await;
            let head = String::from_utf8_lossy(&buf[..n]);
            let mut words = head.split_whitespace();
            let method = words.next().unwrap_or("");
            let path = words.next().unwrap_or("");
            let a = answer(&shared, method, path);
            let resp = format!(
                "HTTP/1.0 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                a.status.as_u16(),
                a.status.canonical_reason().unwrap_or(""),
                a.content_type,
                a.body.len(),
                if method == "HEAD" { "" } else { &a.body }
            );
            let _ = tokio::time::timeout(HEAD_TIMEOUT, stream.write_all(resp.as_bytes())).await;
            let _ = stream.shutdown().await;
        });
    }
}

/// Serve `--metrics-listen`: HTTP/1.1 on TCP, the same answers.
pub async fn serve_tcp(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(64));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        // A few probes and a scraper at a time; more wait for a slot.
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let a = answer(&shared, req.method().as_str(), req.uri().path());
                let body = if req.method() == hyper::Method::HEAD {
                    String::new()
                } else {
                    a.body
                };
                let resp = Response::builder()
                    .status(a.status)
                    .header(hyper::header::CONTENT_TYPE, a.content_type)
                    .body(Full::new(Bytes::from(body)));
                async move {
                    Ok::<_, Infallible>(resp.unwrap_or_else(|_| Response::new(Full::default())))
                }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .max_buf_size(16 * 1024)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc);
            // A scrape takes milliseconds; no connection lives past a minute.
            let _ = tokio::time::timeout(Duration::from_secs(60), conn).await;
            drop(permit);
        });
    }
}
