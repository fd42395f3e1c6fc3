//! What rmcp reads of a stdio MCP server: the server's stdout, a line at a
//! time, with each line's JSON values counted before rmcp parses it.
//!
//! rmcp parses a whole line (up to 16 MiB) into `serde_json::Value`s, at
//! 80 bytes each (`preserve_order`) plus their vectors' growth, before the
//! supervisor sees the result: one response line of 11 MB of `0,0,…` in
//! `structuredContent` took the supervisor to ~760 MiB. [`BoundedLines`]
//! holds each line until its newline (at most [`MAX_LINE_BYTES`], rmcp's own
//! cap), counting with a byte scan how many values it can hold at most;
//! a line over [`MAX_LINE_VALUES`] is never handed to rmcp. In its place
//! rmcp gets a JSON-RPC error response with the line's id (so the call it
//! answers fails at once, naming the bound), or nothing when no id is found
//! (a notification, or a line cut off before its id). A line rmcp could
//! not parse (nesting of 128 levels or more, a syntax error), which rmcp
//! skips without a word while the call waits for its timeout, is answered
//! the same way.
//!
//! Messages the server starts itself are bounded too: rmcp starts a task
//! for each request and notification it reads, and a request's task holds
//! its answer until the server reads it. 200,000 `roots/list` requests
//! from a server that never read its stdin took the supervisor to 640 MiB,
//! 200,000 1 KB notifications to 300 MiB and past the run's deadline. At
//! most [`MAX_SERVER_REQUESTS`] of the server's requests wait for an answer
//! at once, and notifications pass at a bounded rate ([`NOTE_BURST`],
//! [`NOTE_RATE`]); the others are dropped (lackpy's client uses neither).

use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::Transport;
use rmcp::RoleClient;
use std::io;
use std::pin::Pin;
use std::process::Stdio;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{ChildStdin, ChildStdout};

/// Most bytes of one line: rmcp's own cap (`DEFAULT_MAX_LINE_LENGTH`), which
/// the transport keeps too; a longer line is dropped (as rmcp drops it),
/// answered with an error when its id is found.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Most JSON values (scalars, containers, object keys) one line may hold:
/// what one reply to the program can carry ([`super::value::MAX_VALUES`]),
/// plus room for the JSON-RPC envelope and content blocks. Why this: a
/// result past it is refused (`TooLarge`) once converted anyway, and
/// parsing it first is what cost the memory.
pub const MAX_LINE_VALUES: usize = super::value::MAX_VALUES + 65_536;

/// How the error that replaces a dropped line begins (the call's error is
/// then `TooLarge`).
pub const NOT_READ: &str = "the result was not read: ";

/// How the error that replaces a line rmcp cannot parse begins.
const NOT_USABLE: &str = "the answer was not usable: ";

/// Most requests of the server (`ping`, `roots/list`, …) waiting for
/// lackpy's answer at once; more are dropped unanswered. Why 16: an honest
/// server asks one thing at a time (a `ping`), and each waiting answer is
/// a task holding memory while the server does not read it.
pub const MAX_SERVER_REQUESTS: usize = 16;

/// Notifications of the server (progress, log messages) that may pass at
/// once, in tokens: one per notification plus one per KiB of it.
pub const NOTE_BURST: f64 = 4096.0;

/// Tokens (see [`NOTE_BURST`]) regained per second. Why: honest progress
/// and logging is a few a second; lackpy's client ignores them all, and
/// rmcp starts a task for each.
pub const NOTE_RATE: f64 = 1024.0;

/// The server's own requests and notifications let through so far, shared
/// by the reader of its stdout and the writer of its stdin.
#[derive(Debug)]
struct Unsolicited {
    /// The server's requests passed to rmcp and not answered yet.
    requests: std::sync::atomic::AtomicUsize,
    /// Notification tokens left, and when they were last counted.
    notes: std::sync::Mutex<(f64, std::time::Instant)>,
}

impl Default for Unsolicited {
    fn default() -> Self {
        Unsolicited {
            requests: std::sync::atomic::AtomicUsize::new(0),
            notes: std::sync::Mutex::new((NOTE_BURST, std::time::Instant::now())),
        }
    }
}

impl Unsolicited {
    /// Whether a message the server started (`line`, a request when it has
    /// an id) may pass to rmcp.
    fn admit(&self, line: &[u8], request: bool) -> bool {
        use std::sync::atomic::Ordering;
        if request {
            return self
                .requests
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                    (n < MAX_SERVER_REQUESTS).then_some(n + 1)
                })
                .is_ok();
        }
        let mut g = self
            .notes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = std::time::Instant::now();
        let (tokens, last) = *g;
        let tokens = (tokens + now.duration_since(last).as_secs_f64() * NOTE_RATE).min(NOTE_BURST);
        let cost = 1.0 + line.len() as f64 / 1024.0;
        let (left, pass) = if cost <= tokens {
            (tokens - cost, true)
        } else {
            (tokens, false)
        };
        *g = (left, now);
        pass
    }

    /// lackpy answered one of the server's requests.
    fn answered(&self) {
        use std::sync::atomic::Ordering;
        let _ = self
            .requests
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }
}

/// The scan's state within one line.
#[derive(Default)]
struct Scan {
    in_str: bool,
    escaped: bool,
    /// An upper bound on the values seen so far: 1 + every `[`, `{`, `,`
    /// and `:` outside strings.
    values: usize,
    /// Containers open, and the most open at once.
    depth: usize,
    max_depth: usize,
}

/// Nesting serde_json refuses (its recursion limit: entering the 128th
/// container fails), so rmcp cannot parse the line.
const TOO_DEEP: usize = 128;

impl Scan {
    fn feed(&mut self, b: u8) {
        if self.in_str {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_str = false;
            }
            return;
        }
        match b {
            b'"' => self.in_str = true,
            b'[' | b'{' => {
                self.values += 1;
                self.depth += 1;
                self.max_depth = self.max_depth.max(self.depth);
            }
            b']' | b'}' => self.depth = self.depth.saturating_sub(1),
            b',' | b':' => self.values += 1,
            _ => {}
        }
    }
}

/// An upper bound on the JSON values (scalars, containers, object keys)
/// the JSON text `bytes` holds, counted without parsing it (as a line is
/// counted).
pub fn count_values(bytes: &[u8]) -> usize {
    let mut scan = Scan::default();
    for b in bytes {
        scan.feed(*b);
    }
    scan.values.saturating_add(1)
}

/// An [`AsyncRead`] of `inner` that passes on only lines within
/// [`MAX_LINE_BYTES`] and [`MAX_LINE_VALUES`] (see the module).
pub struct BoundedLines<R> {
    inner: R,
    /// The line being read (without its newline), up to [`MAX_LINE_BYTES`].
    line: Vec<u8>,
    scan: Scan,
    /// The line went over [`MAX_LINE_BYTES`]: the rest is dropped.
    too_long: bool,
    /// Bytes ready for the reader, and how many of them it has taken.
    out: Vec<u8>,
    taken: usize,
    eof: bool,
    name: String,
    unsolicited: std::sync::Arc<Unsolicited>,
    /// Messages of the server dropped since the last warning.
    dropped: usize,
}

impl<R> BoundedLines<R> {
    /// Wrap the stdout of the server `name` (named in the errors).
    pub fn new(inner: R, name: &str) -> Self {
        BoundedLines {
            inner,
            line: Vec::new(),
            scan: Scan::default(),
            too_long: false,
            out: Vec::new(),
            taken: 0,
            eof: false,
            name: name.to_string(),
            unsolicited: std::sync::Arc::default(),
            dropped: 0,
        }
    }

    /// Whether the well-formed `line` may pass to rmcp: a response always;
    /// a request or notification of the server's own within the bounds of
    /// [`Unsolicited`].
    fn admit(&mut self) -> bool {
        // A key written with escapes (`"\u006dethod"`) is the same key to
        // rmcp: such a line is taken for one of the server's own messages,
        // and a request (bounded the more tightly).
        let escaped = top_level_key(&self.line, |k| k.contains(&b'\\')).is_some();
        if !escaped && top_level_member(&self.line, b"\"method\"").is_none() {
            return true;
        }
        let request = escaped || top_level_member(&self.line, b"\"id\"").is_some();
        if self.unsolicited.admit(&self.line, request) {
            return true;
        }
        if self.dropped == 0 {
            tracing::warn!(
                server = %self.name,
                "MCP server sends more requests or notifications of its own than lackpy takes (MAX_SERVER_REQUESTS {MAX_SERVER_REQUESTS} waiting, notifications at NOTE_RATE {NOTE_RATE} a second); the others are dropped"
            );
        }
        self.dropped = self.dropped.wrapping_add(1);
        false
    }

    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                self.end_line();
                continue;
            }
            self.scan.feed(b);
            if self.too_long {
                continue;
            }
            if self.line.len() >= MAX_LINE_BYTES {
                self.too_long = true;
                continue;
            }
            self.line.push(b);
        }
    }

    fn end_line(&mut self) {
        let wrong = if self.too_long {
            Some((
                format!("a line of more than {MAX_LINE_BYTES} bytes (MAX_LINE_BYTES)"),
                true,
            ))
        } else {
            what_is_wrong(&self.line, &self.scan, "line")
        };
        match wrong {
            None => {
                if self.admit() {
                    self.out.extend_from_slice(&self.line);
                    self.out.push(b'\n');
                }
            }
            Some((why, size)) => {
                tracing::warn!(server = %self.name, "MCP server sent {why}; dropped");
                if let Some(reply) = error_in_place(&self.line, &self.name, &why, size) {
                    self.out.extend_from_slice(reply.as_bytes());
                    self.out.push(b'\n');
                }
            }
        }
        self.line = Vec::new();
        self.scan = Scan::default();
        self.too_long = false;
    }
}

/// What is wrong with the message `msg` (one line, or one SSE event's
/// data) that `scan` has read whole, and whether it is its size; `None`
/// when rmcp may parse it. `what` names it ("line", "message").
fn what_is_wrong(msg: &[u8], scan: &Scan, what: &str) -> Option<(String, bool)> {
    let values = scan.values.saturating_add(1);
    if values > MAX_LINE_VALUES {
        Some((
            format!(
                "a {what} of more than {MAX_LINE_VALUES} JSON values (MAX_LINE_VALUES: what one reply to the program can carry)"
            ),
            true,
        ))
    } else if scan.max_depth >= TOO_DEEP {
        // rmcp would skip it without a word, and the call it answers
        // would wait for its timeout.
        Some((
            format!("a {what} that cannot be parsed (it nests {TOO_DEEP} levels or more, serde_json's limit)"),
            false,
        ))
    } else if msg.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        // Likewise a syntax error, a number out of range (`1e400`) or a
        // lone surrogate escape; checked without building anything.
        serde_json::from_slice::<Parses>(msg)
            .err()
            .map(|e| (format!("a {what} that cannot be parsed ({e})"), false))
    }
}

/// The JSON-RPC error response that takes the place of the dropped
/// message `msg` of server `name` (`why` it was dropped, `size` whether
/// for its size), when its id is found.
fn error_in_place(msg: &[u8], name: &str, why: &str, size: bool) -> Option<String> {
    let id = top_level_id(msg)?;
    let lead = if size { NOT_READ } else { NOT_USABLE };
    let reply = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32603, "message": format!("{lead}MCP server {name:?} sent {why}")},
    });
    Some(reply.to_string())
}

/// What becomes of one message of a server before rmcp parses it.
#[derive(Debug, PartialEq, Eq)]
pub enum Checked {
    /// rmcp may parse it as it is.
    Pass,
    /// Too many values, too deep, or not JSON: this JSON-RPC error response
    /// with its id takes its place.
    Replace(String),
    /// Likewise, but no id was found: nothing takes its place.
    Drop,
}

/// Check one JSON-RPC message of server `name` (an SSE event's data, or a
/// whole HTTP response body, already within its byte cap) as a stdio
/// server's line is checked: its values counted and its nesting measured
/// before anything parses it (see the module).
pub fn check_message(msg: &[u8], name: &str) -> Checked {
    let mut scan = Scan::default();
    for b in msg {
        scan.feed(*b);
    }
    let Some((why, size)) = what_is_wrong(msg, &scan, "message") else {
        return Checked::Pass;
    };
    tracing::warn!(server = %name, "MCP server sent {why}; dropped");
    match error_in_place(msg, name, &why, size) {
        Some(r) => Checked::Replace(r),
        None => Checked::Drop,
    }
}

/// Deserializes any JSON value, building nothing, but as strictly as a
/// typed parse: numbers are converted (`1e400` fails, as it does for rmcp;
/// `IgnoredAny` only scans their digits), strings are unescaped (a lone
/// surrogate fails), and serde_json's recursion limit applies.
struct Parses;

impl<'de> serde::Deserialize<'de> for Parses {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Parses)
    }
}

impl<'de> serde::de::Visitor<'de> for Parses {
    type Value = Parses;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Parses, E> {
        Ok(Parses)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Parses, E> {
        Ok(Parses)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Parses, E> {
        Ok(Parses)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Parses, E> {
        Ok(Parses)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Parses, E> {
        Ok(Parses)
    }
    fn visit_str<E>(self, _: &str) -> Result<Parses, E> {
        Ok(Parses)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Parses, A::Error> {
        while seq.next_element::<Parses>()?.is_some() {}
        Ok(Parses)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Parses, A::Error> {
        while map.next_key::<Parses>()?.is_some() {
            map.next_value::<Parses>()?;
        }
        Ok(Parses)
    }
}

/// The `id` member of the JSON object `line` (top level only), when it is
/// a number or a string.
fn top_level_id(line: &[u8]) -> Option<serde_json::Value> {
    id_value(line, top_level_member(line, b"\"id\"")?)
}

/// Where the value of the member `key` (quoted, as written: `"id"`) of the
/// JSON object `line` begins (just after its `:`), top level only.
fn top_level_member(line: &[u8], key: &[u8]) -> Option<usize> {
    top_level_key(line, |k| k == key)
}

/// Where the value of the first member of the JSON object `line` (top
/// level only) whose key (quoted, as written) `pick` accepts begins.
fn top_level_key(line: &[u8], mut pick: impl FnMut(&[u8]) -> bool) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = 0;
    // Whether the next string at depth 1 is a key.
    let mut want_key = false;
    while i < line.len() {
        match line[i] {
            b'"' => {
                let end = string_end(line, i)?;
                if depth == 1 && want_key {
                    let found = &line[i..=end];
                    let mut j = end + 1;
                    while line.get(j).is_some_and(u8::is_ascii_whitespace) {
                        j += 1;
                    }
                    if line.get(j) == Some(&b':') && pick(found) {
                        return Some(j + 1);
                    }
                    want_key = false;
                }
                i = end + 1;
                continue;
            }
            b'{' | b'[' => {
                depth += 1;
                want_key = depth == 1 && line[i] == b'{';
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => want_key = true,
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index of the quote closing the string that opens at `start`.
fn string_end(line: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < line.len() {
        match line[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// The number or string value starting (after blanks) at `at`.
fn id_value(line: &[u8], at: usize) -> Option<serde_json::Value> {
    let mut i = at;
    while line.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    let end = if line.get(i) == Some(&b'"') {
        string_end(line, i)? + 1
    } else {
        let n = line[i..]
            .iter()
            .take_while(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'))
            .count();
        i + n
    };
    let raw = line
        .get(i..end)
        .filter(|r| !r.is_empty() && r.len() <= 1024)?;
    serde_json::from_slice::<serde_json::Value>(raw)
        .ok()
        .filter(|v| v.is_number() || v.is_string())
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.taken < this.out.len() {
                let n = buf.remaining().min(this.out.len() - this.taken);
                buf.put_slice(&this.out[this.taken..this.taken + n]);
                this.taken += n;
                if this.taken == this.out.len() {
                    this.out.clear();
                    this.taken = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 16 * 1024];
            let mut rb = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut rb) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {}
            }
            let n = rb.filled().len();
            if n == 0 {
                this.eof = true;
                // A last line without its newline: rmcp drops it at EOF
                // anyway; nothing is passed on.
                continue;
            }
            this.feed(&chunk[..n]);
        }
    }
}

/// A stdio MCP server as rmcp's transport: its stdout read through
/// [`BoundedLines`], its stdin written by rmcp. The process is killed when
/// this is dropped (`kill_on_drop`), as with rmcp's `TokioChildProcess`.
pub struct ServerProcess {
    child: Option<tokio::process::Child>,
    transport: AsyncRwTransport<RoleClient, BoundedLines<ChildStdout>, ChildStdin>,
    unsolicited: std::sync::Arc<Unsolicited>,
}

impl ServerProcess {
    /// Spawn `cmd` (the server `name`) with piped stdin and stdout.
    ///
    /// # Errors
    /// The spawn's error.
    pub fn spawn(mut cmd: tokio::process::Command, name: &str) -> io::Result<Self> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = cmd.spawn()?;
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(io::Error::other("the server's pipes were not made"));
        };
        let lines = BoundedLines::new(stdout, name);
        let unsolicited = lines.unsolicited.clone();
        let transport =
            AsyncRwTransport::new_client(lines, stdin).with_max_line_length(MAX_LINE_BYTES + 1);
        Ok(ServerProcess {
            child: Some(child),
            transport,
            unsolicited,
        })
    }
}

impl Transport<RoleClient> for ServerProcess {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), io::Error>> + Send + 'static {
        let answer = is_answer(&item);
        answered_when_sent(&self.unsolicited, answer, self.transport.send(item))
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    /// Close stdin, give the server 3 s to exit (as rmcp's
    /// `TokioChildProcess` does), then kill it.
    async fn close(&mut self) -> Result<(), io::Error> {
        self.transport.close().await?;
        if let Some(mut child) = self.child.take() {
            let grace = std::time::Duration::from_secs(3);
            if tokio::time::timeout(grace, child.wait()).await.is_err() {
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
        }
        Ok(())
    }
}

/// Whether lackpy's message `item` answers one of the server's requests.
fn is_answer(item: &TxJsonRpcMessage<RoleClient>) -> bool {
    matches!(
        item,
        rmcp::model::JsonRpcMessage::Response(_) | rmcp::model::JsonRpcMessage::Error(_)
    )
}

/// `send` (the sending of a message), which counts as lackpy's answer to
/// one of the server's requests once it is done when `answer` says the
/// message is one: another request may then wait.
fn answered_when_sent<E>(
    unsolicited: &std::sync::Arc<Unsolicited>,
    answer: bool,
    send: impl std::future::Future<Output = Result<(), E>> + Send + 'static,
) -> impl std::future::Future<Output = Result<(), E>> + Send + 'static {
    let unsolicited = unsolicited.clone();
    async move {
        let r = send.await;
        if answer {
            unsolicited.answered();
        }
        r
    }
}

/// A transport that hands rmcp parsed messages (a remote server's, over
/// HTTP), whose server's own requests and notifications are bounded as
/// [`BoundedLines`] bounds a stdio server's: 50,000 `roots/list` requests
/// on a remote server's event stream took `lackpy run` to 221 MiB.
pub struct Bounded<T> {
    inner: T,
    unsolicited: std::sync::Arc<Unsolicited>,
    name: String,
    dropped: usize,
}

impl<T> Bounded<T> {
    /// Wrap the transport of the server `name` (named in the warning).
    pub fn new(inner: T, name: &str) -> Self {
        Bounded {
            inner,
            unsolicited: std::sync::Arc::default(),
            name: name.to_string(),
            dropped: 0,
        }
    }
}

impl<T: Transport<RoleClient> + 'static> Transport<RoleClient> for Bounded<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), T::Error>> + Send + 'static {
        let answer = is_answer(&item);
        answered_when_sent(&self.unsolicited, answer, self.inner.send(item))
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let m = self.inner.receive().await?;
            let pass = match &m {
                rmcp::model::JsonRpcMessage::Request(_) => self.unsolicited.admit(b"", true),
                rmcp::model::JsonRpcMessage::Notification(_) => self.unsolicited.admit(b"", false),
                _ => true,
            };
            if pass {
                return Some(m);
            }
            if self.dropped == 0 {
                tracing::warn!(
                    server = %self.name,
                    "MCP server sends more requests or notifications of its own than lackpy takes (MAX_SERVER_REQUESTS {MAX_SERVER_REQUESTS} waiting, notifications at NOTE_RATE {NOTE_RATE} a second); the others are dropped"
                );
            }
            self.dropped = self.dropped.wrapping_add(1);
        }
    }

    async fn close(&mut self) -> Result<(), T::Error> {
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn filter(input: &[u8]) -> String {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let mut r = BoundedLines::new(input, "s");
            let mut out = Vec::new();
            r.read_to_end(&mut out).await.expect("read");
            String::from_utf8(out).expect("utf-8")
        })
    }

    #[test]
    fn the_servers_own_requests_and_notifications_are_bounded() {
        let req =
            |i: usize| format!("{{\"jsonrpc\":\"2.0\",\"id\":\"s{i}\",\"method\":\"ping\"}}\n");
        let note = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n";
        let resp = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"method\":1}}\n";
        let mut input = String::new();
        for i in 0..100 {
            input.push_str(&req(i));
        }
        for _ in 0..10_000 {
            input.push_str(note);
            input.push_str(resp);
        }
        let out = filter(input.as_bytes());
        assert_eq!(out.matches("\"ping\"").count(), MAX_SERVER_REQUESTS);
        let notes = out.matches("notifications/progress").count();
        // The burst (4096 tokens, a little over one each), and what the rate
        // gave back while the test ran (1024 a second): far fewer than sent.
        assert!((3800..8000).contains(&notes), "{notes}");
        // Responses always pass (a `method` below the top level is data).
        assert_eq!(out.matches("\"result\"").count(), 10_000);
        // Keys written with escapes are the server's own requests.
        let sneaky = "{\"jsonrpc\":\"2.0\",\"\\u0069d\":1,\"\\u006dethod\":\"ping\"}\n";
        let out = filter(sneaky.repeat(100).as_bytes());
        assert_eq!(out.matches("u006dethod").count(), MAX_SERVER_REQUESTS);
        // An answer lets another request of the server through.
        let u = Unsolicited::default();
        for _ in 0..MAX_SERVER_REQUESTS {
            assert!(u.admit(b"", true));
        }
        assert!(!u.admit(b"", true));
        u.answered();
        assert!(u.admit(b"", true));
    }

    #[test]
    fn ordinary_lines_pass_unchanged() {
        let text = concat!(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":[1,2,\"x,y:[{\"]}}\n{\"b\":2}\n",
            r#"{"c":"\u00e9\ud83d\ude00\n\"","d":-1.5e300}"#,
            "\n"
        );
        assert_eq!(filter(text.as_bytes()), text);
    }

    /// A line of more values than a reply can carry becomes an error
    /// response with its id, wherever the id is among the top members.
    #[test]
    fn a_line_of_too_many_values_becomes_an_error_with_its_id() {
        let many = "0,".repeat(MAX_LINE_VALUES);
        for line in [
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{\"structuredContent\":[{many}0]}}}}\n"
            ),
            format!(
                "{{\"result\":{{\"x\":[{many}0],\"id\":1}},\"jsonrpc\":\"2.0\",\"id\":\"q7\"}}\n"
            ),
        ] {
            let out = filter(line.as_bytes());
            let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON line");
            assert!(v["id"] == 7 || v["id"] == "q7", "{v}");
            let msg = v["error"]["message"].as_str().unwrap_or("");
            assert!(msg.contains("MAX_LINE_VALUES"), "{msg}");
        }
        // A line rmcp could not parse (too deep, broken) is answered too.
        let deep = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}{}}}\n",
            "[".repeat(200),
            "]".repeat(200)
        );
        let v: serde_json::Value = serde_json::from_str(&filter(deep.as_bytes())).expect("JSON");
        assert_eq!(v["id"], 3, "{v}");
        let msg = v["error"]["message"].as_str().unwrap_or("");
        assert!(
            msg.contains("cannot be parsed (it nests 128 levels"),
            "{msg}"
        );
        for (id, result) in [(4, "{\"a\":tru}"), (5, "[1e400]"), (6, "\"\\ud800\"")] {
            let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}\n");
            let v: serde_json::Value =
                serde_json::from_str(&filter(line.as_bytes())).expect("JSON");
            assert_eq!(v["id"], id, "{line}: {v}");
        }
        // Without an id there is nothing to answer: the line is dropped.
        let note = format!("{{\"method\":\"x\",\"params\":[{many}0]}}\n{{\"ok\":1}}\n");
        assert_eq!(filter(note.as_bytes()), "{\"ok\":1}\n");
    }
}
