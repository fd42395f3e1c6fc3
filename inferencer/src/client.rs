//! A minimal, single-threaded HTTP/1.1 client (POST only) over
//! `std::net::TcpStream`, with rustls for `https`.
//!
//! Why not a general HTTP library: the inferencer worker runs under a
//! seccomp allowlist and `RLIMIT_NPROC=0`, so it cannot start threads (a
//! blocking client built on an async runtime spawns one) and may only use
//! `socket connect read write poll setsockopt getsockopt fcntl` on top of
//! the executor's list. This client needs exactly those: a blocking socket,
//! `connect_timeout` (non-blocking connect + poll), and per-read timeouts
//! set from one overall deadline. Names never resolve inside the jail: the
//! supervisor resolves the host first and passes the address in.
//!
//! Supported framing: `Content-Length`, `Transfer-Encoding: chunked`, and
//! read-to-EOF (`Connection: close` is always sent). Header block capped at
//! [`MAX_HEADER_BYTES`]; the body cap is the caller's.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Largest response header block accepted. Why: real model servers send
/// well under 4 KiB of headers; more is a hostile or broken endpoint.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// A parsed `http://` or `https://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// `https`?
    pub https: bool,
    /// Host name or address (IPv6 without brackets).
    pub host: String,
    /// Port (default 80/443).
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
}

impl Url {
    /// Parse a URL.
    ///
    /// # Errors
    /// A message saying what is wrong.
    pub fn parse(s: &str) -> Result<Url, String> {
        let (https, rest) = if let Some(r) = s.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = s.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(format!("{s:?} is not an http:// or https:// URL"));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let default_port = if https { 443 } else { 80 };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or("unterminated [ in host")?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().map_err(|_| format!("bad port {p:?}"))?,
                None if after.is_empty() => default_port,
                None => return Err("junk after ] in host".into()),
            };
            (h.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (
                    h.to_string(),
                    p.parse().map_err(|_| format!("bad port {p:?}"))?,
                ),
                None => (authority.to_string(), default_port),
            }
        };
        if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err("missing or bad host".into());
        }
        if path.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err("bad characters in the path".into());
        }
        Ok(Url {
            https,
            host,
            port,
            path: path.to_string(),
        })
    }

    fn host_header(&self) -> String {
        let h = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let default = if self.https { 443 } else { 80 };
        if self.port == default {
            h
        } else {
            format!("{h}:{}", self.port)
        }
    }
}

/// Resolve a URL's host to socket addresses (outside the jail only).
///
/// # Errors
/// The resolver's message.
pub fn resolve(url: &Url) -> Result<Vec<SocketAddr>, String> {
    (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map(Iterator::collect)
        .map_err(|e| e.to_string())
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientError {
    /// No connection (refused, unreachable, TLS handshake failed).
    Connect(String),
    /// The deadline passed.
    Timeout,
    /// The connection broke or the answer is not HTTP.
    Protocol(String),
}

enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Stream {
    fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => &s.sock,
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

fn tls_config() -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(Arc::new(cfg))
}

fn io_err(e: &std::io::Error, during: &str) -> ClientError {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => ClientError::Timeout,
        _ => ClientError::Protocol(format!("{during}: {e}")),
    }
}

/// A response whose body is read incrementally, de-chunked.
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// A `Retry-After` header given in seconds, if any.
    pub retry_after_secs: Option<u64>,
    conn: Conn,
    framing: Framing,
}

enum Framing {
    Length(u64),
    Chunked { left_in_chunk: u64, done: bool },
    Eof,
}

struct Conn {
    stream: Stream,
    buf: Vec<u8>,
    pos: usize,
    deadline: Instant,
    eof: bool,
}

impl Conn {
    /// Read more bytes into the buffer; false at EOF.
    fn fill(&mut self) -> Result<bool, ClientError> {
        if self.eof {
            return Ok(false);
        }
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > 64 * 1024 {
            // Many tiny chunks can leave a little unread data every time:
            // drop what was consumed so the buffer stays small.
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ClientError::Timeout);
        }
        let _ = self
            .stream
            .tcp()
            .set_read_timeout(Some(left.max(Duration::from_millis(1))));
        let mut chunk = [0u8; 16 * 1024];
        let n = loop {
            match self.stream.read(&mut chunk) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // A peer that closes without TLS close_notify: treat as EOF.
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break 0,
                Err(e) => return Err(io_err(&e, "reading the answer")),
            }
        };
        if n == 0 {
            self.eof = true;
            return Ok(false);
        }
        self.buf
            .extend_from_slice(chunk.get(..n).unwrap_or_default());
        Ok(true)
    }

    fn available(&self) -> &[u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }

    /// One line without its CRLF, at most `max` bytes.
    fn line(&mut self, max: usize) -> Result<String, ClientError> {
        loop {
            if let Some(i) = self.available().iter().position(|b| *b == b'\n') {
                let line = String::from_utf8_lossy(self.available().get(..i).unwrap_or_default())
                    .trim_end_matches('\r')
                    .to_string();
                self.pos += i + 1;
                return Ok(line);
            }
            if self.available().len() > max {
                return Err(ClientError::Protocol("header line too long".into()));
            }
            if !self.fill()? {
                return Err(ClientError::Protocol(
                    "connection closed in the middle of the headers".into(),
                ));
            }
        }
    }

    /// Copy up to `limit` buffered-or-fresh bytes into `out`; 0 at EOF.
    fn take(&mut self, out: &mut [u8], limit: u64) -> Result<usize, ClientError> {
        if self.available().is_empty() && !self.fill()? {
            return Ok(0);
        }
        let n = self
            .available()
            .len()
            .min(out.len())
            .min(usize::try_from(limit).unwrap_or(usize::MAX));
        out.get_mut(..n)
            .unwrap_or_default()
            .copy_from_slice(self.available().get(..n).unwrap_or_default());
        self.pos += n;
        Ok(n)
    }
}

impl Response {
    /// Read decoded body bytes; 0 at the end of the body.
    ///
    /// # Errors
    /// Timeout at the deadline, or a broken stream.
    pub fn read(&mut self, out: &mut [u8]) -> Result<usize, ClientError> {
        if out.is_empty() {
            return Ok(0);
        }
        match &mut self.framing {
            Framing::Length(left) => {
                if *left == 0 {
                    return Ok(0);
                }
                let n = self.conn.take(out, *left)?;
                if n == 0 {
                    return Err(ClientError::Protocol(
                        "connection closed before the end of the body".into(),
                    ));
                }
                *left -= n as u64;
                Ok(n)
            }
            Framing::Eof => self.conn.take(out, u64::MAX),
            Framing::Chunked {
                left_in_chunk,
                done,
            } => {
                if *done {
                    return Ok(0);
                }
                if *left_in_chunk == 0 {
                    let line = self.conn.line(1024)?;
                    let size_text = line.split(';').next().unwrap_or("").trim();
                    let size = u64::from_str_radix(size_text, 16).map_err(|_| {
                        ClientError::Protocol(format!("bad chunk size {size_text:?}"))
                    })?;
                    if size == 0 {
                        // Trailers until an empty line (bounded).
                        for _ in 0..64 {
                            if self.conn.line(8192).map(|l| l.is_empty()).unwrap_or(true) {
                                break;
                            }
                        }
                        *done = true;
                        return Ok(0);
                    }
                    *left_in_chunk = size;
                }
                let n = self.conn.take(out, *left_in_chunk)?;
                if n == 0 {
                    return Err(ClientError::Protocol(
                        "connection closed inside a chunk".into(),
                    ));
                }
                *left_in_chunk -= n as u64;
                if *left_in_chunk == 0 {
                    let crlf = self.conn.line(2)?;
                    if !crlf.is_empty() {
                        return Err(ClientError::Protocol("missing CRLF after a chunk".into()));
                    }
                }
                Ok(n)
            }
        }
    }
}

/// POST `body` to `url` with extra `headers`; returns once the status line
/// and headers are in. Every step respects `deadline`.
///
/// # Errors
/// [`ClientError`].
pub fn post(
    url: &Url,
    headers: &[(&str, &str)],
    body: &[u8],
    connect_timeout: Duration,
    deadline: Instant,
    pinned: Option<SocketAddr>,
) -> Result<Response, ClientError> {
    let addrs = match pinned {
        Some(a) => vec![a],
        None => resolve(url)
            .map_err(|e| ClientError::Connect(format!("cannot resolve {}: {e}", url.host)))?,
    };
    let mut last = ClientError::Connect("no address".into());
    let mut tcp = None;
    for a in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ClientError::Timeout);
        }
        match TcpStream::connect_timeout(
            &a,
            connect_timeout.min(left).max(Duration::from_millis(1)),
        ) {
            Ok(s) => {
                tcp = Some(s);
                break;
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::TimedOut
                    || e.kind() == std::io::ErrorKind::WouldBlock =>
            {
                last = ClientError::Timeout
            }
            Err(e) => last = ClientError::Connect(e.to_string()),
        }
    }
    let tcp = tcp.ok_or(last)?;
    let _ = tcp.set_nodelay(true);
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    let _ = tcp.set_write_timeout(Some(left));
    let _ = tcp.set_read_timeout(Some(left));
    let mut stream = if url.https {
        let cfg = tls_config().map_err(ClientError::Connect)?;
        let name = rustls::pki_types::ServerName::try_from(url.host.clone())
            .map_err(|e| ClientError::Connect(format!("bad TLS server name: {e}")))?;
        let conn = rustls::ClientConnection::new(cfg, name)
            .map_err(|e| ClientError::Connect(format!("TLS: {e}")))?;
        Stream::Tls(Box::new(rustls::StreamOwned::new(conn, tcp)))
    } else {
        Stream::Plain(tcp)
    };
    let mut head = format!("POST {} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\nConnection: close\r\nAccept-Encoding: identity\r\n", url.path, url.host_header(), body.len());
    for (k, v) in headers {
        if k.contains(['\r', '\n', ':']) || v.contains(['\r', '\n']) {
            return Err(ClientError::Protocol(format!("bad header {k}")));
        }
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    stream
        .write_all(&request)
        .map_err(|e| match io_err(&e, "sending the request") {
            ClientError::Protocol(m) if url.https => ClientError::Connect(m),
            other => other,
        })?;
    let _ = stream.flush();
    let mut conn = Conn {
        stream,
        buf: Vec::new(),
        pos: 0,
        deadline,
        eof: false,
    };
    let status_line = conn.line(8192).map_err(|e| match e {
        ClientError::Protocol(m) if m.contains("closed") => {
            ClientError::Protocol("the server closed the connection without answering".into())
        }
        other => other,
    })?;
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .filter(|_| version.starts_with("HTTP/1."))
        .ok_or_else(|| {
            ClientError::Protocol(format!(
                "not an HTTP answer: {:?}",
                status_line.chars().take(80).collect::<String>()
            ))
        })?;
    let mut length = None;
    let mut chunked = false;
    let mut retry_after_secs = None;
    let mut total = status_line.len();
    loop {
        let line = conn.line(MAX_HEADER_BYTES)?;
        total += line.len() + 2;
        if total > MAX_HEADER_BYTES {
            return Err(ClientError::Protocol("response headers too large".into()));
        }
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            let k = k.trim().to_ascii_lowercase();
            let v = v.trim();
            if k == "content-length" {
                length = Some(
                    v.parse::<u64>()
                        .map_err(|_| ClientError::Protocol(format!("bad Content-Length {v:?}")))?,
                );
            } else if k == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked") {
                chunked = true;
            } else if k == "retry-after" {
                // Seconds only; an HTTP date is ignored (the backoff applies).
                retry_after_secs = v.parse::<u64>().ok();
            }
        }
    }
    let framing = if chunked {
        Framing::Chunked {
            left_in_chunk: 0,
            done: false,
        }
    } else if let Some(n) = length {
        Framing::Length(n)
    } else {
        Framing::Eof
    };
    Ok(Response {
        status,
        retry_after_secs,
        conn,
        framing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_urls() {
        let u = Url::parse("http://localhost:11434/api/generate").ok();
        assert_eq!(
            u,
            Some(Url {
                https: false,
                host: "localhost".into(),
                port: 11434,
                path: "/api/generate".into()
            })
        );
        let u = Url::parse("https://user:pw@api.example.com/v1/messages?x=1").ok();
        assert_eq!(
            u.as_ref()
                .map(|u| (u.port, u.host.as_str(), u.path.as_str())),
            Some((443, "api.example.com", "/v1/messages?x=1"))
        );
        let u = Url::parse("http://[::1]:8080").ok();
        assert_eq!(
            u.as_ref()
                .map(|u| (u.host.as_str(), u.port, u.host_header())),
            Some(("::1", 8080, "[::1]:8080".to_string()))
        );
        assert!(Url::parse("ftp://x").is_err());
        assert!(Url::parse("http://:80/").is_err());
        assert!(Url::parse("http://h:99999/").is_err());
        assert!(Url::parse("http://h/a b").is_err());
    }

    #[test]
    fn tls_config_builds() {
        assert!(tls_config().is_ok());
    }
}
