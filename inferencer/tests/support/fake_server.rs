//! A scripted HTTP server on a loopback address for model-wire tests: one reply per
//! connection, in order, from a thread that ends when its script is used
//! up or after 30 s. Shared by `inferencer/tests/http.rs` (the client and
//! the cascade in-process) and the root package's `tests/delegate.rs` (the
//! real binary and its jailed inferencer worker).

#![allow(dead_code)] // each includer uses its own part of it

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One scripted reply.
#[derive(Clone)]
pub enum Reply {
    /// Status and JSON body, with Content-Length.
    Body(u16, String),
    /// 200 with a chunked body sent piece by piece, with a pause between.
    Chunks(Vec<String>, Duration),
    /// Accept, read the request, then say nothing for this long.
    Silent(Duration),
    /// 200 with a body of `n` bytes of filler.
    Huge(usize),
    /// These exact bytes, then close.
    Raw(Vec<u8>),
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Request target (`/api/generate`).
    pub path: String,
    /// Request line and headers.
    pub headers: String,
    /// Body.
    pub body: String,
}

/// A running fake endpoint.
pub struct Server {
    /// `http://127.A.B.C:PORT` ([`loopback_ip`]).
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    handle: Option<JoinHandle<()>>,
}

impl Server {
    /// Serve `script` in order, one reply per connection.
    pub fn start(script: Vec<Reply>) -> Server {
        let listener = TcpListener::bind((loopback_ip(), 0)).expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = Arc::clone(&seen);
        listener.set_nonblocking(true).expect("nonblocking");
        let handle = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            for reply in script {
                let stream = loop {
                    match listener.accept() {
                        Ok((s, _)) => break Some(s),
                        Err(_) if Instant::now() < deadline => {
                            std::thread::sleep(Duration::from_millis(5))
                        }
                        Err(_) => break None,
                    }
                };
                let Some(mut s) = stream else { return };
                let _ = s.set_nonblocking(false);
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                if let Some(req) = read_request(&mut s) {
                    seen2.lock().expect("lock").push(req);
                }
                respond(&mut s, &reply);
            }
        });
        Server {
            url,
            seen,
            handle: Some(handle),
        }
    }

    /// The requests so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }

    /// The requests so far, each as its whole text (headers and body).
    pub fn requests(&self) -> Vec<String> {
        self.seen()
            .into_iter()
            .map(|s| format!("{}{}", s.headers, s.body))
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // The thread ends by itself once its script is used or its deadline passes.
        let _ = self.handle.take();
    }
}

fn read_request(s: &mut TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let len: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap_or(0))
        })
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
    Some(Seen {
        path,
        headers: head,
        body: String::from_utf8_lossy(&buf[head_end..]).to_string(),
    })
}

fn respond(s: &mut TcpStream, r: &Reply) {
    match r {
        Reply::Body(status, body) => {
            let _ = write!(s, "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
        }
        Reply::Chunks(parts, pause) => {
            let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
            for p in parts {
                let _ = write!(s, "{:x}\r\n{p}\r\n", p.len());
                let _ = s.flush();
                std::thread::sleep(*pause);
            }
            let _ = write!(s, "0\r\n\r\n");
        }
        Reply::Silent(d) => std::thread::sleep(*d),
        Reply::Raw(bytes) => {
            let _ = s.write_all(bytes);
        }
        Reply::Huge(n) => {
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {n}\r\nConnection: close\r\n\r\n"
            );
            let block = vec![b'x'; 64 * 1024];
            let mut left = *n;
            while left > 0 {
                let k = left.min(block.len());
                if s.write_all(&block[..k]).is_err() {
                    break;
                }
                left -= k;
            }
        }
    }
    let _ = s.flush();
}

/// An Ollama `/api/generate` answer.
pub fn ollama(text: &str) -> Reply {
    Reply::Body(
        200,
        serde_json::json!({"response": text, "done": true}).to_string(),
    )
}

/// An OpenAI chat-completions answer.
pub fn openai(text: &str) -> Reply {
    Reply::Body(
        200,
        serde_json::json!({"choices": [{"message": {"role": "assistant", "content": text}}]})
            .to_string(),
    )
}

/// A URL on a loopback address where nothing listens (the port was bound
/// and released on an address no other server of this process uses).
pub fn closed_port_url() -> String {
    let l = TcpListener::bind((loopback_ip(), 0)).expect("bind");
    format!("http://{}", l.local_addr().expect("addr"))
}

/// A fresh address of 127.0.0.0/8 (all of it is loopback on Linux) for one
/// fake server. Why not 127.0.0.1: every test connection there leaves a
/// TIME_WAIT entry, and with a few thousand of them (a test run) a new
/// server's port and the client's port can match one; the kernel then
/// answers the client's SYN with a reset and the connection is refused
/// (measured here: about 1 connection in 300 with ~900 entries). Another
/// address makes another 4-tuple.
pub fn loopback_ip() -> std::net::Ipv4Addr {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let seed = std::process::id()
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
    // 127.1.0.0 – 127.254.255.255: never 127.0.0.x.
    let x = seed
        .wrapping_mul(2_654_435_761)
        .wrapping_add(n.wrapping_mul(40_503))
        % (254 * 65_536);
    std::net::Ipv4Addr::new(127, 1 + (x >> 16) as u8, (x >> 8) as u8, x as u8)
}
