//! Flow control for one MCP stream session (stdio, or a `serve` connection):
//! the server stops reading requests while it cannot deliver answers.
//!
//! Why: rmcp starts a task per request and another per reply, none of them
//! bounded. A client that writes requests and never reads the replies (or
//! pipelines thousands of them) made `lackpy mcp` grow by ~150 MiB a second
//! (300,000 pipelined `tools/list`: 4.6 GiB after 30 s). Three bounds fix it,
//! the way an HTTP server applies backpressure:
//!
//! 1. [`FlowRead`] reads nothing while [`MAX_IN_FLIGHT`] requests of this
//!    session are being handled ([`Bounded`] counts them), so the client's
//!    own writes block once the socket or pipe buffer is full;
//! 2. [`FlowRead`] also reads nothing while a reply is stuck in
//!    [`FlowWrite`] (the peer is not reading);
//! 3. a reply stuck for [`WRITE_STALL`] ends the session: [`FlowRead`]
//!    reports end of input, which cancels the session's runs and closes it
//!    (a peer that reads nothing for that long is gone or hostile).
//!
//! Nothing is dropped silently: a request is read and answered (one over
//! [`MAX_REQUEST_LINE`] with an error naming the cap), or left in the
//! peer's buffer.

use rmcp::model::{ClientNotification, ClientRequest, ServerConfig, ServerResult};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, Service};
use rmcp::ErrorData as McpError;
use std::borrow::Cow;
use std::future::Future as _;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Requests of one session handled at once; the next is read when one ends.
/// Why 64: far above what a client waits on at once (runs are capped lower,
/// by `max_concurrent_runs` and the quotas), and 64 tasks are a few KiB.
pub const MAX_IN_FLIGHT: usize = 64;

/// The longest request line a stream session reads; a longer one is
/// discarded as it arrives (never held whole), logged, and answered with a
/// `-32601` error naming the cap (with the line's id when [`FlowRead`]
/// finds it in the line's first KiB or as its last member, else an
/// id-less `-32600`).
/// Why 1 MiB: the same as HTTP's default `max_body_bytes`, and 16 times the
/// default `source_bytes` of a program. rmcp's own default, 16 MiB, let one
/// line of small JSON values take the server to ~2 GiB while it parsed
/// (an 8 MiB `[0,0,...]` argument: 947 MiB peak, 2 s of CPU per line).
pub const MAX_REQUEST_LINE: usize = 1 << 20;

/// Most JSON values (as `count_values` counts them: scalars, containers,
/// object keys) one request may hold; a line (or, over HTTP, a body) with
/// more is answered with an error naming the cap, never parsed.
/// Why 16,384: a request is a program's text and a few names (a
/// `tools/call` of `run_program` holds about ten values), so this is far
/// above any request the tools accept, while parsing one costs at most
/// ~1.5 MiB beyond its bytes. Without it a 1 MiB body of `[0,0,…]` (512K
/// values) cost ~125 MiB while parsed, and `lackpy serve --listen` parses
/// bodies concurrently: 96 of them, posted at once in one session, took it
/// to 3.6 GiB (512 connections allowed).
pub const MAX_REQUEST_VALUES: usize = 16_384;

/// How long a reply may wait for the peer to read before the session ends.
/// Why 60 s: a client that reads its replies drains a full pipe in
/// microseconds; one that has read nothing for a minute holds a connection
/// slot and memory for nothing.
pub const WRITE_STALL: Duration = Duration::from_secs(60);

/// The state the reader, the writer and the request counter share.
#[derive(Debug, Default)]
pub struct Flow {
    in_flight: AtomicUsize,
    write_blocked: AtomicBool,
    /// A reply waited [`WRITE_STALL`]: the reader reports end of input.
    dead: AtomicBool,
    reader: Mutex<Option<Waker>>,
    max_in_flight: usize,
    stall: Duration,
}

impl Flow {
    /// A flow with the default bounds.
    pub fn new() -> Arc<Self> {
        Self::with_bounds(MAX_IN_FLIGHT, WRITE_STALL)
    }

    /// A flow with the given bounds (tests use small ones).
    pub fn with_bounds(max_in_flight: usize, stall: Duration) -> Arc<Self> {
        Arc::new(Flow {
            max_in_flight: max_in_flight.max(1),
            stall,
            ..Flow::default()
        })
    }

    fn wake_reader(&self) {
        let w = self.reader.lock().ok().and_then(|mut g| g.take());
        if let Some(w) = w {
            w.wake();
        }
    }

    fn paused(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) >= self.max_in_flight
            || self.write_blocked.load(Ordering::SeqCst)
    }

    fn begin(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(self.clone())
    }
}

/// One request being handled; counts down (and wakes the reader) when dropped.
struct InFlight(Arc<Flow>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.0.wake_reader();
    }
}

/// The session's input: reads only while the [`Flow`] allows it, and
/// passes on whole lines of at most [`MAX_REQUEST_LINE`] bytes. A longer
/// line is dropped as it arrives and replaced, once its newline comes, by
/// a one-line request whose method names the problem, with the dropped
/// line's `id` when it was in the line's first KiB at the top level or is
/// the line's last member (where the TypeScript SDK writes it), so the
/// client gets a `-32601` error saying why instead of no reply.
pub struct FlowRead<R> {
    inner: R,
    flow: Arc<Flow>,
    /// The last read returned data: yield once before the next, so the
    /// request tasks it started run (and are counted) before more is read.
    /// Without it rmcp's loop read ~9,000 requests from a flooding client
    /// before the first of their tasks ran.
    yield_next: bool,
    /// The line being read (at most `max_line` bytes).
    line: Vec<u8>,
    /// Whole lines (or a replacement) waiting to be read, and how far.
    ready: Vec<u8>,
    ready_at: usize,
    /// The current line is over the cap: drop bytes up to its newline.
    dropping: bool,
    /// Of a line being dropped: the id found in its first KiB, and its
    /// last [`TAIL_KEEP`] bytes (where the TypeScript SDK puts the id).
    head_id: Option<Vec<u8>>,
    tail: Vec<u8>,
    max_line: usize,
}

/// Bytes kept of the end of a dropped line, to find an `"id"` member
/// written last. Why 256: the id token is at most 128 bytes.
const TAIL_KEEP: usize = 256;

impl<R> FlowRead<R> {
    /// Wrap the session's input.
    pub fn new(inner: R, flow: Arc<Flow>) -> Self {
        Self::with_max_line(inner, flow, MAX_REQUEST_LINE)
    }

    /// Wrap the session's input with another line cap (tests).
    pub fn with_max_line(inner: R, flow: Arc<Flow>, max_line: usize) -> Self {
        FlowRead {
            inner,
            flow,
            yield_next: false,
            line: Vec::new(),
            ready: Vec::new(),
            ready_at: 0,
            dropping: false,
            head_id: None,
            tail: Vec::new(),
            max_line,
        }
    }

    /// Keep the last [`TAIL_KEEP`] bytes of a line being dropped.
    fn keep_tail(&mut self, part: &[u8]) {
        self.tail
            .extend_from_slice(&part[part.len().saturating_sub(TAIL_KEEP)..]);
        let over = self.tail.len().saturating_sub(TAIL_KEEP);
        self.tail.drain(..over);
    }

    /// The dropped line has ended: its replacement, with the id found at
    /// its start or, failing that, as its last member.
    fn dropped_line_ended(&mut self) {
        let id = self
            .head_id
            .take()
            .or_else(|| trailing_id(&self.tail).map(<[u8]>::to_vec));
        self.ready
            .extend_from_slice(&oversized_request(id.as_deref(), self.max_line));
        self.tail.clear();
        self.dropping = false;
    }

    /// Split `chunk` into lines: whole ones go to `ready`, an oversized
    /// one becomes its replacement.
    fn take(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() {
            let nl = chunk.iter().position(|b| *b == b'\n');
            let (part, rest) = match nl {
                Some(k) => (&chunk[..=k], &chunk[k + 1..]),
                None => (chunk, &[][..]),
            };
            chunk = rest;
            if self.dropping {
                self.keep_tail(part);
                if nl.is_some() {
                    self.dropped_line_ended();
                }
                continue;
            }
            if self.line.len() + part.len() > self.max_line + usize::from(nl.is_some()) {
                tracing::warn!(
                    max = self.max_line,
                    "an MCP request line over the cap was discarded"
                );
                self.head_id = top_level_id(&self.line, part).map(<[u8]>::to_vec);
                self.tail.clear();
                let kept = self.line[self.line.len().saturating_sub(TAIL_KEEP)..].to_vec();
                self.keep_tail(&kept);
                self.keep_tail(part);
                self.line.clear();
                self.dropping = true;
                if nl.is_some() {
                    self.dropped_line_ended();
                }
                continue;
            }
            self.line.extend_from_slice(part);
            if nl.is_some() {
                self.whole_line_read();
            }
        }
    }

    /// A whole line is in `line`: it goes on as it is when rmcp can read
    /// it (or it is blank, or a notification or response, which get no
    /// reply), else as a request that gets its error reply (see
    /// [`message_check`]).
    fn whole_line_read(&mut self) {
        if self.line.trim_ascii().is_empty() {
            self.ready.append(&mut self.line);
            return;
        }
        if lackpy_supervisor::providers::count_values(&self.line) > MAX_REQUEST_VALUES {
            tracing::warn!(
                max = MAX_REQUEST_VALUES,
                "an MCP request line of too many JSON values was discarded"
            );
            let id = top_level_id(&self.line, &[])
                .or_else(|| trailing_id(&self.line[self.line.len().saturating_sub(TAIL_KEEP)..]))
                .map(<[u8]>::to_vec);
            self.line.clear();
            self.ready
                .extend_from_slice(&too_many_values_request(id.as_deref()));
            return;
        }
        match message_check(&self.line) {
            Ok(()) => self.ready.append(&mut self.line),
            Err(LineProblem::NotJson(e)) => {
                tracing::warn!(error = %e, "an MCP request line that is not JSON was answered with an error");
                let id = top_level_id(&self.line, &[])
                    .or_else(|| {
                        trailing_id(&self.line[self.line.len().saturating_sub(TAIL_KEEP)..])
                    })
                    .map(<[u8]>::to_vec);
                self.line.clear();
                self.ready
                    .extend_from_slice(&unparsable_request(id.as_deref(), &e));
            }
            Err(LineProblem::BadParams { id, method, error }) => {
                tracing::warn!(error = %error, "an MCP request with invalid params was answered with an error");
                self.line.clear();
                self.ready.extend_from_slice(&standin_request(
                    id.as_deref(),
                    &format!("invalid params for {method}: {error}; the request was discarded"),
                ));
            }
            Err(LineProblem::NotMessage { id, error }) => {
                tracing::warn!(error = %error, "an MCP request that is not a valid message was answered with an error");
                self.line.clear();
                self.ready
                    .extend_from_slice(&invalid_request(id.as_deref(), &error));
            }
        }
    }
}

/// Why a whole line cannot go on to rmcp as it is.
enum LineProblem {
    /// serde_json cannot parse it.
    NotJson(serde_json::Error),
    /// It is JSON, but not a message rmcp reads; `id`: its top-level
    /// `"id"` as rmcp would accept it (a string or an `i64`), as JSON.
    NotMessage {
        id: Option<Vec<u8>>,
        error: serde_json::Error,
    },
    /// A known method whose params do not fit it.
    BadParams {
        id: Option<Vec<u8>>,
        method: String,
        error: serde_json::Error,
    },
}

/// Whether rmcp reads `line` as a message: the same parse rmcp makes
/// (its `ClientJsonRpcMessage`, after a UTF-8 byte-order mark), so a line
/// rmcp would skip without a reply is known here. Why: rmcp skips a line
/// serde_json cannot parse (a lone surrogate escape, which JavaScript's
/// `JSON.stringify` writes; nesting deeper than 128; a number out of
/// range such as `1e400`; a syntax error), and answers most JSON that is
/// not a message with an id-less `-32600`, so the client waited for its
/// request's id until its own timeout. A notification or a response that
/// does not parse passes as it is: neither gets a reply (rmcp ignores
/// non-standard notifications on purpose). Cost: the line is parsed twice,
/// here and by rmcp.
fn message_check(line: &[u8]) -> Result<(), LineProblem> {
    const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";
    let line = line.strip_prefix(UTF8_BOM).unwrap_or(line);
    let error = match serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(line) {
        Ok(rmcp::model::JsonRpcMessage::Request(r)) => return known_method_params(&r),
        Ok(_) => return Ok(()),
        Err(e) => e,
    };
    let v = match serde_json::from_slice::<serde_json::Value>(line) {
        Ok(v) => v,
        Err(e) => return Err(LineProblem::NotJson(e)),
    };
    let member = |k: &str| v.as_object().and_then(|o| o.get(k));
    let (id, method) = (member("id"), member("method"));
    let no_reply_wanted = (id.is_none() && method.is_some())
        || (method.is_none() && (member("result").is_some() || member("error").is_some()));
    if no_reply_wanted {
        return Ok(());
    }
    let id = match id {
        Some(serde_json::Value::String(s)) => Some(serde_json::Value::from(s.as_str()).to_string()),
        Some(serde_json::Value::Number(n)) => n.as_i64().map(|i| i.to_string()),
        _ => None,
    };
    Err(LineProblem::NotMessage {
        id: id.map(String::into_bytes),
        error,
    })
}

/// A request rmcp parsed as a custom one because its method's params do
/// not fit the method (`tools/call` with `"arguments": "x"`): rmcp would
/// answer "method not found" with the method as the message. Why: that
/// names the wrong fault; the stand-in says what is wrong with the params.
fn known_method_params(
    r: &rmcp::model::JsonRpcRequest<rmcp::model::ClientRequest>,
) -> Result<(), LineProblem> {
    use rmcp::model::ClientRequest;
    let ClientRequest::CustomRequest(c) = &r.request else {
        return Ok(());
    };
    if c.method != "tools/call" {
        return Ok(());
    }
    let params = c.params.clone().unwrap_or(serde_json::Value::Null);
    match serde_json::from_value::<rmcp::model::CallToolRequestParams>(params) {
        Ok(_) => Ok(()),
        Err(error) => Err(LineProblem::BadParams {
            id: serde_json::to_vec(&r.id).ok(),
            method: c.method.clone(),
            error,
        }),
    }
}

/// The request that stands for a line serde_json cannot parse (see
/// [`message_check`]). rmcp answers it with `-32601` and the method as
/// the message, with the line's id when it was found (in the first KiB at
/// the top level, or as the last member), else with an id-less `-32600`.
/// Not `-32700`: rmcp has no way to send one.
fn unparsable_request(id: Option<&[u8]>, e: &serde_json::Error) -> Vec<u8> {
    standin_request(
        id,
        &format!("request not parsed: the line is not valid JSON ({e}); it was discarded"),
    )
}

/// The request that stands for a JSON line that is not a message rmcp
/// reads (`{"id":9}`, a request without `"jsonrpc"`, an id rmcp cannot
/// hold, a known method's params of the wrong type): answered like
/// [`unparsable_request`], so the client gets its id back with the reason.
fn invalid_request(id: Option<&[u8]>, e: &serde_json::Error) -> Vec<u8> {
    standin_request(
        id,
        &format!("invalid request: the line is JSON but not a valid JSON-RPC request ({e}); it was discarded"),
    )
}

/// The request that stands for a dropped oversized line: rmcp answers an
/// unknown method with `-32601` and the method as the message.
fn oversized_request(id: Option<&[u8]>, max: usize) -> Vec<u8> {
    standin_request(
        id,
        &format!("request too large: the line was over {max} bytes and was discarded unread"),
    )
}

/// The request that stands for a line of more than [`MAX_REQUEST_VALUES`]
/// JSON values, discarded unparsed.
fn too_many_values_request(id: Option<&[u8]>) -> Vec<u8> {
    standin_request(
        id,
        &format!("request too large: the line holds more than {MAX_REQUEST_VALUES} JSON values (MAX_REQUEST_VALUES) and was discarded unparsed"),
    )
}

/// A request line standing for one that was discarded: `id` (the raw token
/// found in the discarded line) and a `method` that says why, which rmcp
/// echoes as the message of its `-32601` "method not found".
fn standin_request(id: Option<&[u8]>, method: &str) -> Vec<u8> {
    let mut v = br#"{"jsonrpc":"2.0","id":"#.to_vec();
    // Without an id the line is an invalid request, which rmcp answers
    // with an id-less `-32600`.
    v.extend_from_slice(id.unwrap_or(b"null"));
    v.extend_from_slice(br#","method":"#);
    v.extend_from_slice(serde_json::Value::from(method).to_string().as_bytes());
    v.extend_from_slice(b"}\n");
    v
}

/// The raw JSON token of the top-level `"id"` member of a request line,
/// looked for in the first `ID_SCAN` bytes of the line as read so far
/// (`head`, or `tail` when nothing was kept yet): a number, or a string
/// without escapes or control characters, at most 128 bytes. `None` when
/// it is not there, is anything else, or lies further in.
fn top_level_id<'a>(head: &'a [u8], tail: &'a [u8]) -> Option<&'a [u8]> {
    const ID_SCAN: usize = 1024;
    let text: &[u8] = if head.is_empty() { tail } else { head };
    let text = &text[..text.len().min(ID_SCAN)];
    let (mut depth, mut i, mut key_at_depth1) = (0usize, 0usize, false);
    while i < text.len() {
        match text[i] {
            b'"' => {
                let start = i;
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    if text[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                let s = text.get(start + 1..i)?;
                i += 1;
                if depth == 1 && key_at_depth1 && s == b"id" {
                    let after = text.get(i..)?.trim_ascii_start().strip_prefix(b":")?;
                    return id_token(after.trim_ascii_start());
                }
                key_at_depth1 = false;
            }
            b'{' | b'[' => {
                depth += 1;
                key_at_depth1 = depth == 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b',' => {
                key_at_depth1 = depth == 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
}

/// The raw JSON token of an `"id"` member written last in a request line
/// whose end is `tail`: the line ends `,"id":TOKEN}` (or `{"id":TOKEN}`),
/// whitespace allowed between tokens, TOKEN as in [`id_token`]. Such a
/// member is the top-level object's: the line's last `}` closes that
/// object, and a quote not escaped (the `,` or `{` before `"id"` shows it
/// is not) cannot lie inside a string.
fn trailing_id(tail: &[u8]) -> Option<&[u8]> {
    let whole = tail.trim_ascii_end();
    let body = whole.strip_suffix(b"}")?.trim_ascii_end();
    let start = if body.last() == Some(&b'"') {
        // A string: from its opening quote (an id kept has no escapes).
        body[..body.len() - 1].iter().rposition(|b| *b == b'"')?
    } else {
        body.len()
            - body
                .iter()
                .rev()
                .take_while(|b| b.is_ascii_digit() || **b == b'-')
                .count()
    };
    // `whole` from `start`: the token, then what ends it (`}`).
    let token = id_token(whole.get(start..)?)?;
    if token.len() != body.len() - start {
        return None;
    }
    let before = body[..start]
        .trim_ascii_end()
        .strip_suffix(b":")?
        .trim_ascii_end()
        .strip_suffix(b"\"id\"")?
        .trim_ascii_end();
    matches!(before.last(), Some(b',' | b'{')).then_some(token)
}

/// A JSON number or a plain string at the start of `s`, as raw bytes.
fn id_token(s: &[u8]) -> Option<&[u8]> {
    let end = if s.first() == Some(&b'"') {
        let close = s.iter().skip(1).position(|b| *b == b'"')? + 2;
        let body = s.get(1..close - 1)?;
        if body.iter().any(|b| *b == b'\\' || *b < 0x20) {
            return None;
        }
        close
    } else {
        let n = s
            .iter()
            .position(|b| !(b.is_ascii_digit() || *b == b'-'))
            .unwrap_or(s.len());
        // An integer rmcp can hold, followed by what ends a token: `1` of
        // `1.5` or `1e400` is not the id, nor digits cut off by the scan.
        let ends = s
            .get(n)
            .is_some_and(|b| matches!(b, b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n'));
        let fits = std::str::from_utf8(&s[..n]).is_ok_and(|t| t.parse::<i64>().is_ok());
        if !ends || !fits {
            return None;
        }
        n
    };
    (end <= 128).then(|| &s[..end])
}

impl<R: AsyncRead + Unpin> AsyncRead for FlowRead<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.flow.dead.load(Ordering::SeqCst) {
            // End of input: the session ends and its runs are cancelled.
            return Poll::Ready(Ok(()));
        }
        loop {
            // Whole lines already read go out first.
            if this.ready_at < this.ready.len() {
                let n = buf.remaining().min(this.ready.len() - this.ready_at);
                buf.put_slice(&this.ready[this.ready_at..this.ready_at + n]);
                this.ready_at += n;
                if this.ready_at == this.ready.len() {
                    this.ready.clear();
                    this.ready_at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.flow.paused() {
                // Register first, then look again: a wake between the two
                // checks is not lost.
                if let Ok(mut g) = this.flow.reader.lock() {
                    *g = Some(cx.waker().clone());
                }
                if this.flow.dead.load(Ordering::SeqCst) {
                    return Poll::Ready(Ok(()));
                }
                if this.flow.paused() {
                    return Poll::Pending;
                }
            }
            if this.yield_next {
                this.yield_next = false;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            let mut chunk = [0u8; 8192];
            let mut rb = ReadBuf::new(&mut chunk);
            let polled = Pin::new(&mut this.inner).poll_read(cx, &mut rb);
            let n = rb.filled().len();
            match polled {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) if n == 0 => {
                    // End of input: a last line without its newline goes
                    // out as it is, then the end.
                    if !this.line.is_empty() && !this.dropping {
                        this.ready.append(&mut this.line);
                        continue;
                    }
                    if this.dropping {
                        this.dropped_line_ended();
                        continue;
                    }
                    return Poll::Ready(Ok(()));
                }
                Poll::Ready(Ok(())) => {
                    this.take(&chunk[..n]);
                    this.yield_next = true;
                }
            }
        }
    }
}

/// The session's output: tells the [`Flow`] while a write is stuck, and
/// ends the session when one is stuck for [`WRITE_STALL`].
pub struct FlowWrite<W> {
    inner: W,
    flow: Arc<Flow>,
    stall: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<W> FlowWrite<W> {
    /// Wrap the session's output.
    pub fn new(inner: W, flow: Arc<Flow>) -> Self {
        FlowWrite {
            inner,
            flow,
            stall: None,
        }
    }

    /// Record the outcome of one write-side poll.
    fn account<T>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match r {
            Poll::Pending => {
                self.flow.write_blocked.store(true, Ordering::SeqCst);
                let stall = self.flow.stall;
                let timer = self
                    .stall
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(stall)));
                if timer.as_mut().poll(cx).is_ready() {
                    tracing::warn!(
                        "the MCP peer has read no reply for {} s: ending the session",
                        stall.as_secs()
                    );
                    self.flow.dead.store(true, Ordering::SeqCst);
                    self.flow.write_blocked.store(false, Ordering::SeqCst);
                    self.flow.wake_reader();
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the peer read no reply within the write stall limit",
                    )));
                }
                Poll::Pending
            }
            Poll::Ready(r) => {
                self.stall = None;
                if self.flow.write_blocked.swap(false, Ordering::SeqCst) {
                    self.flow.wake_reader();
                }
                if r.is_err() {
                    // The peer is gone: let the reader find out too.
                    self.flow.wake_reader();
                }
                Poll::Ready(r)
            }
        }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for FlowWrite<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.flow.dead.load(Ordering::SeqCst) {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        }
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.account(cx, r)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_flush(cx);
        this.account(cx, r)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// A server whose requests are counted in a [`Flow`] while they are handled.
pub struct Bounded<S> {
    inner: S,
    flow: Arc<Flow>,
}

impl<S> Bounded<S> {
    /// Count `inner`'s requests in `flow`.
    pub fn new(inner: S, flow: Arc<Flow>) -> Self {
        Bounded { inner, flow }
    }
}

impl<S: Service<RoleServer>> Service<RoleServer> for Bounded<S> {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        let _counted = self.flow.begin();
        self.inner.handle_request(request, context).await
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.inner.handle_notification(notification, context).await
    }

    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [rmcp::model::ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A reader over `data` and how many bytes one read of it gave, or None
    /// when the read did not finish within 100 ms (paused).
    async fn read_some<R: AsyncRead + Unpin>(r: &mut FlowRead<R>) -> Option<usize> {
        let mut buf = [0u8; 64];
        tokio::time::timeout(Duration::from_millis(100), r.read(&mut buf))
            .await
            .ok()
            .map(|n| n.unwrap_or(0))
    }

    /// Everything a FlowRead with a `max`-byte line cap passes on for `input`.
    async fn lines_through(input: &[u8], max: usize) -> String {
        let mut r = FlowRead::with_max_line(input, Flow::new(), max);
        let mut out = Vec::new();
        r.read_to_end(&mut out).await.expect("read");
        String::from_utf8(out).expect("utf-8")
    }

    /// A line of more values than [`MAX_REQUEST_VALUES`] (well within the
    /// byte cap) is replaced, unparsed, by a request answered with its id;
    /// one at the cap passes.
    #[tokio::test]
    async fn a_line_of_too_many_values_is_answered_with_its_id() {
        let many = vec!["0"; MAX_REQUEST_VALUES].join(",");
        let line = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"method\":\"tools/call\",\"params\":{{\"name\":\"x\",\"arguments\":{{\"a\":[{many}]}}}}}}\n"
        );
        let out = lines_through(line.as_bytes(), MAX_REQUEST_LINE).await;
        assert!(
            out.starts_with(r#"{"jsonrpc":"2.0","id":"q","method":"request too large"#),
            "{out:.200}"
        );
        assert!(out.contains("MAX_REQUEST_VALUES"), "{out:.200}");
        let few = vec!["0"; MAX_REQUEST_VALUES - 100].join(",");
        let ok = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"a\":[{few}]}}}}\n"
        );
        assert_eq!(lines_through(ok.as_bytes(), MAX_REQUEST_LINE).await, ok);
    }

    #[tokio::test]
    async fn whole_lines_pass_and_an_oversized_one_is_answered_with_its_id() {
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","x":"{}"}}"#,
            "a".repeat(100)
        );
        let ping = |id: &str| format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":"ping"}}"#);
        let input = format!("{}\n{long}\n{}\nlast", ping("1"), ping("2"));
        let out = lines_through(input.as_bytes(), 64).await;
        let lines: Vec<&str> = out.split('\n').collect();
        assert_eq!(lines[0], ping("1"));
        let v: serde_json::Value = serde_json::from_str(lines[1]).expect("JSON");
        assert_eq!(v["id"], 7, "{out}");
        assert!(
            v["method"]
                .as_str()
                .is_some_and(|m| m.contains("over 64 bytes")),
            "{out}"
        );
        assert_eq!(lines[2], ping("2"));
        assert_eq!(lines[3], "last", "a last line without newline passes");
        assert_eq!(lines.len(), 4);
        // A line of exactly the cap passes.
        let exact = format!("{}\n", ping(&"x".repeat(63 - ping("").len())));
        assert_eq!(exact.len(), 64);
        assert_eq!(lines_through(exact.as_bytes(), 64).await, exact);
    }

    /// A line serde_json cannot parse is replaced by a request rmcp answers
    /// with an error, with the line's id when it has one at its start or
    /// its end; JSON lines and blank lines pass unchanged.
    #[tokio::test]
    async fn a_line_that_is_not_json_is_answered_with_its_id() {
        let surrogate =
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"program":"'\ud800'"}}"#;
        let id_last = r#"{"jsonrpc":"2.0","method":"x","params":{"a":[1,}},"id":"ts-6"}"#;
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":8,"x":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let input = format!("{surrogate}\n{id_last}\n\n{deep}\nnot json at all\n{{\"id\":9}}\n");
        let out = lines_through(input.as_bytes(), 1 << 20).await;
        let lines: Vec<&str> = out.split('\n').collect();
        let replaced = |line: &str| -> serde_json::Value {
            let v: serde_json::Value = serde_json::from_str(line).expect("JSON");
            assert!(
                v["method"].as_str().is_some_and(
                    |m| m.starts_with("request not parsed: the line is not valid JSON")
                ),
                "{line}"
            );
            v["id"].clone()
        };
        assert_eq!(replaced(lines[0]), serde_json::json!(5));
        assert_eq!(replaced(lines[1]), serde_json::json!("ts-6"));
        assert_eq!(lines[2], "", "a blank line passes");
        assert_eq!(replaced(lines[3]), serde_json::json!(8));
        assert_eq!(replaced(lines[4]), serde_json::Value::Null);
        let v: serde_json::Value = serde_json::from_str(lines[5]).expect("JSON");
        assert_eq!(v["id"], 9, "{}", lines[5]);
    }

    /// JSON that rmcp would skip or answer without its id (a number out of
    /// range, no `"jsonrpc"`, a method that is not a string, `tools/call`
    /// params of the wrong shape) is replaced by a request carrying the id
    /// and the reason; a valid request, a notification and a response pass
    /// unchanged, and an id rmcp cannot hold is not copied.
    #[tokio::test]
    async fn json_that_is_not_a_valid_request_is_answered_with_its_id() {
        let ok = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_program","arguments":{"program":"1"}}}"#;
        let note = r#"{"jsonrpc":"2.0","method":"notifications/whatever","params":5}"#;
        let response = r#"{"jsonrpc":"2.0","id":3,"result":{"x":1}}"#;
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"x":1e400}}"#,
                serde_json::json!(5),
                "request not parsed",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}"#,
                serde_json::Value::Null,
                "request not parsed",
            ),
            (
                r#"{"id":7,"method":"tools/list"}"#,
                serde_json::json!(7),
                "invalid request",
            ),
            (
                r#"{"jsonrpc":"2.0","id":"s","method":5}"#,
                serde_json::json!("s"),
                "invalid request",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1.5,"method":"m","x":[]}"#,
                serde_json::Value::Null,
                "invalid request",
            ),
            (
                r#"{"jsonrpc":"2.0","id":99999999999999999999,"method":"tools/list"}"#,
                serde_json::Value::Null,
                "invalid request",
            ),
            (
                r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"run_program","arguments":"x"}}"#,
                serde_json::json!(10),
                "invalid params for tools/call",
            ),
        ];
        let mut input = format!("{ok}\n{note}\n{response}\n");
        for (line, _, _) in &cases {
            input.push_str(line);
            input.push('\n');
        }
        let out = lines_through(input.as_bytes(), 1 << 20).await;
        let lines: Vec<&str> = out.split('\n').collect();
        assert_eq!(&lines[..3], &[ok, note, response]);
        for (k, (line, id, reason)) in cases.iter().enumerate() {
            let v: serde_json::Value = serde_json::from_str(lines[3 + k]).expect("JSON");
            assert_eq!(&v["id"], id, "{line} became {}", lines[3 + k]);
            assert!(
                v["method"].as_str().is_some_and(|m| m.starts_with(reason)),
                "{line} became {}",
                lines[3 + k]
            );
        }
    }

    #[tokio::test]
    async fn an_oversized_line_with_its_id_last_is_answered_with_it() {
        // The TypeScript SDK writes the id after the params.
        let long = format!(
            r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"x":"{}","id":3}},"id":"req-9"}}"#,
            "a".repeat(300)
        );
        for input in [format!("{long}\n{{\"id\":2}}\n"), long.clone()] {
            let out = lines_through(input.as_bytes(), 64).await;
            let first = out.split('\n').next().unwrap_or("");
            let v: serde_json::Value = serde_json::from_str(first).expect("JSON");
            assert_eq!(v["id"], "req-9", "{out}");
        }
        // Split across reads, the tail still counts.
        let mut r = FlowRead::with_max_line(&b""[..], Flow::new(), 64);
        for piece in long.as_bytes().chunks(50) {
            FlowRead::take(&mut r, piece);
        }
        FlowRead::take(&mut r, b"\n");
        let v: serde_json::Value = serde_json::from_slice(r.ready.trim_ascii_end()).expect("JSON");
        assert_eq!(v["id"], "req-9");
    }

    #[test]
    fn only_a_plain_last_member_id_is_taken_from_the_end() {
        let id =
            |s: &str| trailing_id(s.as_bytes()).map(|t| String::from_utf8_lossy(t).to_string());
        assert_eq!(id(r#"..."x":1},"id":42}"#).as_deref(), Some("42"));
        assert_eq!(
            id("...,\"id\" : \"a-1\" }\r\n").as_deref(),
            Some(r#""a-1""#)
        );
        assert_eq!(id(r#"{"id":-7}"#).as_deref(), Some("-7"));
        // Nested (the last `}` closes params, not the line), inside a
        // string, escaped, not last, not plain.
        assert_eq!(id(r#"..."params":{"id":5}}"#), None);
        assert_eq!(id(r#""x":"a\",\"id\":5}"#), None);
        assert_eq!(id(r#"..."id":5,"m":"x"}"#), None);
        assert_eq!(id(r#"...,"id":{"a":1}}"#), None);
        assert_eq!(id(r#"...,"id":"a\"b"}"#), None);
        assert_eq!(id(r#"...,"xid":5}"#), None);
        assert_eq!(id("}"), None);
        assert_eq!(id(""), None);
    }

    #[test]
    fn only_a_plain_top_level_id_is_copied() {
        let id = |s: &str| {
            top_level_id(b"", s.as_bytes()).map(|t| String::from_utf8_lossy(t).to_string())
        };
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":42,"method":"m"}"#).as_deref(),
            Some("42")
        );
        assert_eq!(
            id(r#"{"id" : "abc-1", "method":"m"}"#).as_deref(),
            Some(r#""abc-1""#)
        );
        assert_eq!(id(r#"{"params":{"id":5},"id":-3}"#).as_deref(), Some("-3"));
        assert_eq!(id(r#"{"method":"m","params":{"id":5}}"#), None, "nested id");
        assert_eq!(
            id(r#"{"x":""id":9","id":1}"#).as_deref(),
            Some("1"),
            "an id inside a string"
        );
        assert_eq!(
            id(r#"{"id":"a
b"}"#),
            None,
            "escapes are not copied"
        );
        assert_eq!(id(r#"{"id":{"x":1}}"#), None);
        assert_eq!(id(r#"{"id":1-2}"#), None);
        assert_eq!(
            id(&format!(r#"{{"id":"{}"}}"#, "a".repeat(200))),
            None,
            "too long"
        );
        assert_eq!(
            id(&format!(r#"{{"pad":"{}","id":1}}"#, "a".repeat(2000))),
            None,
            "beyond the first KiB"
        );
    }

    #[tokio::test]
    async fn reading_waits_while_the_in_flight_cap_is_reached() {
        let flow = Flow::with_bounds(2, WRITE_STALL);
        let mut r = FlowRead::new(&b"abcdef"[..], flow.clone());
        let (a, b) = (flow.begin(), flow.begin());
        assert_eq!(read_some(&mut r).await, None, "read at the cap");
        drop(a);
        assert!(read_some(&mut r).await.is_some_and(|n| n > 0));
        drop(b);
    }

    #[tokio::test]
    async fn a_stuck_reply_pauses_reading_and_a_stalled_one_ends_the_session() {
        let flow = Flow::with_bounds(64, Duration::from_millis(300));
        let mut r = FlowRead::new(&b"more requests\n"[..], flow.clone());
        // A peer that reads nothing: a 16-byte pipe fills at once.
        let (peer, ours) = tokio::io::duplex(16);
        let mut w = FlowWrite::new(ours, flow.clone());
        let writer = tokio::spawn(async move { w.write_all(&[b'x'; 64]).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(read_some(&mut r).await, None, "read while a reply is stuck");
        let err = writer
            .await
            .expect("join")
            .expect_err("the stalled write fails");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        // Then the input ends: the session shuts down and cancels its runs.
        assert_eq!(read_some(&mut r).await, Some(0));
        drop(peer);
    }

    #[tokio::test]
    async fn a_reply_the_peer_reads_resumes_reading() {
        let flow = Flow::with_bounds(64, WRITE_STALL);
        let mut r = FlowRead::new(&b"next\n"[..], flow.clone());
        let (mut peer, ours) = tokio::io::duplex(16);
        let mut w = FlowWrite::new(ours, flow.clone());
        let writer = tokio::spawn(async move { w.write_all(&[b'x'; 64]).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(read_some(&mut r).await, None);
        let mut got = vec![0u8; 64];
        peer.read_exact(&mut got)
            .await
            .expect("peer reads the reply");
        writer.await.expect("join").expect("the write completes");
        assert!(read_some(&mut r).await.is_some_and(|n| n > 0));
    }
}
