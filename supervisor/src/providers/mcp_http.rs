//! What rmcp's Streamable HTTP client reads of a remote (`transport =
//! "http"`) MCP server: every message's JSON values counted, and its
//! nesting measured, before rmcp parses it, as a stdio server's lines are
//! ([`super::mcp_lines`]).
//!
//! rmcp's reqwest client parses a JSON response body whole (up to
//! `max_json_response_size`, 16 MiB) into `serde_json::Value`s inside
//! `post_message`, before anything of lackpy's sees it: 15 MiB of `0,0,…`
//! in a `tools/call` result took `lackpy run` to 1 GiB for a call then
//! refused as `TooLarge`; an `initialize` answer likewise at every
//! connection. [`Counted`] wraps that client: the POSTs of requests
//! (all but `server/discover`) are made here, their body read within the
//! same byte caps and checked
//! with [`check_message`] before it is parsed; an SSE stream's events
//! (those POSTs', and every stream rmcp's client opens) are checked one by
//! one before rmcp parses them. A message over [`super::mcp_lines::MAX_LINE_VALUES`]
//! (or one rmcp cannot parse) is replaced by a JSON-RPC error response
//! with its id, so the call fails at once, naming the bound. Everything
//! else (the handshake, notifications, `DELETE`) is rmcp's own code.

use super::mcp_lines::{check_message, Checked};
use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use http::{HeaderName, HeaderValue, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, SseError, StreamableHttpClient,
    StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::{Sse, SseStream};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

type Error = StreamableHttpError<reqwest::Error>;
type Events = BoxStream<'static, Result<Sse, SseError>>;

/// Longest `Retry-After` value kept from a `429`/`5xx`.
const MAX_RETRY_AFTER: usize = 64;

/// rmcp's reqwest client, with every message a remote server sends checked
/// before rmcp parses it (see the module).
#[derive(Clone)]
pub struct Counted {
    inner: reqwest::Client,
    /// The server's name, for the errors and warnings.
    name: Arc<str>,
}

impl Counted {
    /// Wrap `inner`, the client of the server `name`.
    pub fn new(inner: reqwest::Client, name: &str) -> Self {
        Counted {
            inner,
            name: name.into(),
        }
    }

    /// `events` with each event's data checked ([`check_message`]): one
    /// over the bounds gets the error response in its place, or no data.
    fn checked(&self, events: Events) -> Events {
        let name = self.name.clone();
        events
            .map(move |item| {
                item.map(|mut sse| {
                    if let Some(data) = &sse.data {
                        match check_message(data.as_bytes(), &name) {
                            Checked::Pass => {}
                            Checked::Replace(r) => sse.data = Some(r),
                            Checked::Drop => sse.data = None,
                        }
                    }
                    sse
                })
            })
            .boxed()
    }

    /// POST a request and read its answer,
    /// checked before it is parsed. What rmcp's own `post_message` does
    /// for a request in a session, but for the check: the answer's status
    /// and type, its byte caps (`limits`), the errors it returns.
    async fn post_request(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let body = serde_json::to_vec(&message)?;
        let mut req = self
            .inner
            .post(uri.as_ref())
            .header(
                http::header::ACCEPT,
                format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
            )
            .header(http::header::CONTENT_TYPE, JSON_MIME_TYPE);
        if let Some(a) = auth_header {
            req = req.bearer_auth(a);
        }
        for (name, value) in custom_headers {
            let n = name.as_str();
            if n.eq_ignore_ascii_case("accept")
                || n.eq_ignore_ascii_case(HEADER_SESSION_ID)
                || n.eq_ignore_ascii_case(HEADER_LAST_EVENT_ID)
            {
                return Err(StreamableHttpError::ReservedHeaderConflict(n.to_string()));
            }
            req = req.header(name, value);
        }
        let attached = session_id.is_some();
        if let Some(s) = session_id {
            req = req.header(HEADER_SESSION_ID, s.as_ref());
        }
        let mut resp = req
            .body(body)
            .send()
            .await
            .map_err(StreamableHttpError::Client)?;
        let status = resp.status();
        let header = |r: &reqwest::Response, h: &str| {
            r.headers()
                .get(h)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        let challenge = header(&resp, "www-authenticate");
        match (status, challenge) {
            (StatusCode::UNAUTHORIZED, Some(c)) => {
                return Err(StreamableHttpError::AuthRequired(AuthRequiredError::new(c)));
            }
            (StatusCode::FORBIDDEN, Some(c)) => {
                let scope = scope_of(&c);
                return Err(StreamableHttpError::InsufficientScope(
                    InsufficientScopeError::new(c, scope),
                ));
            }
            _ => {}
        }
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && attached {
            return Err(StreamableHttpError::SessionExpired);
        }
        let content_type = header(&resp, "content-type");
        let is = |mime: &str| {
            content_type.as_deref().is_some_and(|ct| {
                ct.split(';')
                    .next()
                    .is_some_and(|e| e.trim().eq_ignore_ascii_case(mime))
            })
        };
        let session = header(&resp, HEADER_SESSION_ID);
        if !status.is_success() {
            // A JSON-RPC error in a JSON body is the answer; else the
            // status, with a bounded prefix of the body.
            if is(JSON_MIME_TYPE) && status != StatusCode::TOO_MANY_REQUESTS {
                if let Ok(body) = read_body(&mut resp, limits.max_json_response_size).await {
                    if let Some(ServerJsonRpcMessage::Error(e)) = self.parse(&message, &body) {
                        return Ok(StreamableHttpPostResponse::Json(
                            ServerJsonRpcMessage::Error(e),
                            session,
                        ));
                    }
                }
            }
            if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
                let retry = header(&resp, "retry-after").filter(|v| v.len() <= MAX_RETRY_AFTER);
                return Err(HttpStatusError::new(status.as_u16(), retry).into());
            }
            let prefix = read_prefix(&mut resp, limits.max_error_response_size).await;
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status}: {prefix}"),
            )));
        }
        if is(EVENT_STREAM_MIME_TYPE) {
            let bytes = bounded_events(resp, limits.max_sse_event_size);
            let events = SseStream::from_bytes_stream(bytes).boxed();
            return Ok(StreamableHttpPostResponse::Sse(
                self.checked(events),
                session,
            ));
        }
        if is(JSON_MIME_TYPE) {
            let body = read_body(&mut resp, limits.max_json_response_size).await?;
            return match self.parse(&message, &body) {
                Some(m) => Ok(StreamableHttpPostResponse::Json(m, session)),
                None => Err(StreamableHttpError::UnexpectedServerResponse(
                    Cow::Borrowed("the JSON response is not a JSON-RPC message"),
                )),
            };
        }
        Err(StreamableHttpError::UnexpectedContentType(content_type))
    }

    /// The answer `body` to `request`, checked before it is parsed: over
    /// the bounds, the error response with its id (the request's when the
    /// body's is not found). `None`: it is not a JSON-RPC message.
    fn parse(&self, request: &ClientJsonRpcMessage, body: &[u8]) -> Option<ServerJsonRpcMessage> {
        match check_message(body, &self.name) {
            Checked::Pass => serde_json::from_slice(body).ok(),
            Checked::Replace(r) => serde_json::from_str(&r).ok(),
            Checked::Drop => {
                let ClientJsonRpcMessage::Request(req) = request else {
                    return None;
                };
                let error = serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": req.id,
                    "error": {"code": -32603, "message": format!(
                        "{}MCP server {:?} sent an answer that could not be read",
                        super::mcp_lines::NOT_READ, self.name
                    )},
                });
                serde_json::from_value(error).ok()
            }
        }
    }
}

/// The `scope=` parameter of a `WWW-Authenticate` value (quoted or not).
fn scope_of(challenge: &str) -> Option<String> {
    let at = challenge.to_ascii_lowercase().find("scope=")?;
    let rest = challenge.get(at + 6..)?;
    let value = match rest.strip_prefix('"') {
        Some(q) => q.split('"').next()?,
        None => rest.split([',', ' ']).next()?,
    };
    Some(value.to_string())
}

/// The whole body of `resp`, at most `max` bytes (else
/// `ResponseBodyTooLarge`, before anything past the cap is held).
async fn read_body(resp: &mut reqwest::Response, max: usize) -> Result<Vec<u8>, Error> {
    let too_large = StreamableHttpError::ResponseBodyTooLarge { max_size: max };
    if resp
        .content_length()
        .is_some_and(|n| n > u64::try_from(max).unwrap_or(u64::MAX))
    {
        return Err(too_large);
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(StreamableHttpError::Client)? {
        if body.len().saturating_add(chunk.len()) > max {
            return Err(too_large);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// At most `max` bytes of the body of `resp`, as text (for an error).
async fn read_prefix(resp: &mut reqwest::Response, max: usize) -> String {
    let mut body = Vec::new();
    while body.len() < max {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                let room = max - body.len();
                body.extend_from_slice(chunk.get(..room).unwrap_or(&chunk));
            }
            _ => break,
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// Counts the bytes of the SSE event being read, across chunks.
#[derive(Default)]
struct EventSize {
    /// Bytes of the current event (line ends not counted).
    len: usize,
    /// At the start of a line (an empty line ends the event).
    line_start: bool,
    /// The last byte was `\r` (a `\n` after it ends the same line).
    after_cr: bool,
}

impl EventSize {
    /// Whether `chunk` keeps every event within `max` bytes.
    fn feed(&mut self, chunk: &[u8], max: usize) -> bool {
        for &b in chunk {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\r' | b'\n' => {
                    if self.line_start {
                        self.len = 0;
                    }
                    self.line_start = true;
                    self.after_cr = b == b'\r';
                }
                _ => {
                    self.after_cr = false;
                    self.line_start = false;
                    self.len += 1;
                    if self.len > max {
                        return false;
                    }
                }
            }
        }
        true
    }
}

/// The bytes of `resp`, failing once an SSE event outgrows `max` bytes
/// (rmcp's own client bounds its events the same way).
fn bounded_events(
    resp: reqwest::Response,
    max: usize,
) -> BoxStream<'static, Result<Bytes, std::io::Error>> {
    let state = (
        resp,
        EventSize {
            line_start: true,
            ..EventSize::default()
        },
        false,
    );
    futures::stream::unfold(state, move |(mut resp, mut size, failed)| async move {
        if failed {
            return None;
        }
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                if size.feed(&chunk, max) {
                    Some((Ok(chunk), (resp, size, false)))
                } else {
                    let e = std::io::Error::other(format!("an SSE event of more than {max} bytes"));
                    Some((Err(e), (resp, size, true)))
                }
            }
            Ok(None) => None,
            Err(e) => Some((Err(std::io::Error::other(e)), (resp, size, true))),
        }
    })
    .boxed()
}

/// Whether rmcp's client posts `message` here: every request but
/// `server/discover` (whose refusal by a legacy server rmcp's own code
/// turns into its fallback). Notifications and responses get no answer
/// lackpy reads.
fn posted_here(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, ClientJsonRpcMessage::Request(r)
        if !matches!(r.request, ClientRequest::DiscoverRequest(_)))
}

impl StreamableHttpClient for Counted {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        if posted_here(&message) {
            return self
                .post_request(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    limits,
                )
                .await;
        }
        let resp = self
            .inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await?;
        Ok(match resp {
            StreamableHttpPostResponse::Sse(events, session) => {
                StreamableHttpPostResponse::Sse(self.checked(events), session)
            }
            other => other,
        })
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events, Error> {
        let events = self
            .inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await?;
        Ok(self.checked(events))
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<Events, Error> {
        let events = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        Ok(self.checked(events))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_sizes_are_counted_across_chunks_and_line_ends() {
        let mut s = EventSize {
            line_start: true,
            ..EventSize::default()
        };
        // Two events of 10 bytes each (CRLF, LF and CR line ends).
        assert!(s.feed(b"data: abcd\r\n\r\ndata: ", 10));
        assert!(s.feed(b"wxyz\n\n", 10));
        assert!(s.feed(b"data: 1234\r\r", 10));
        // One event of two lines: 11 bytes.
        assert!(s.feed(b"data: 12\r\n", 10));
        assert!(!s.feed(b"d:4", 10));
        assert_eq!(
            scope_of("Bearer scope=\"a b\", x=y").as_deref(),
            Some("a b")
        );
        assert_eq!(scope_of("Bearer scope=read,x").as_deref(), Some("read"));
        assert_eq!(scope_of("Bearer"), None);
    }
}
