//! Model HTTP: one request to one endpoint, in one of four wire formats,
//! with bounded time, size and retries.
//!
//! [`generate`] is a pure function of its [`Request`] (plus the network): it
//! is what the jailed inferencer worker runs, and what runs in-process when
//! no worker is used. It never sees files, tools or results.
//!
//! Transport: `ureq` (blocking, no threads of its own, so it runs in the
//! jailed worker where `RLIMIT_NPROC` is 0), rustls with the ring provider
//! and the webpki roots, no proxy taken from the environment, no redirects,
//! no pooled connections. Names are never resolved in the jail: the
//! supervisor resolves the endpoint ([`resolve`]) and pins the address
//! ([`Endpoint::pinned_addr`]); ureq's resolver is replaced by one that only
//! returns it.
//!
//! Bounds: a connect timeout and a whole-request timeout per try; at most
//! `retries` further tries, only after a 5xx, 429, timeout or connection
//! failure, with exponential backoff capped at [`MAX_BACKOFF`] (a
//! `Retry-After` in seconds honoured within it); the body is abandoned past
//! `max_response_bytes`, the header block past [`MAX_HEADER_BYTES`]. API
//! keys live in [`Secret`], whose `Debug` is redacted, and travel only in
//! headers; error messages name the URL without its query or user info.

use bincode::{Decode, Encode};
pub use lackpy_policy::config::Secret;
use serde_json::{json, Value};
use std::io::{BufRead, Read};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};
use ureq::tls::{RootCerts, TlsConfig, TlsProvider};
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{Connector, NextTimeout, RustlsConnector, TcpConnector};

/// Longest pause between two tries. Why: retries exist for a model server
/// that is briefly busy; a longer wait only delays the next provider.
pub const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// The wire format of an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Encode, Decode)]
pub enum Wire {
    /// Ollama `POST /api/generate` (`prompt` + `system`).
    OllamaGenerate,
    /// Ollama `POST /api/chat` (`messages`).
    OllamaChat,
    /// OpenAI-compatible `POST /v1/chat/completions`.
    OpenAi,
    /// Anthropic `POST /v1/messages`.
    Anthropic,
}

impl Wire {
    /// The full endpoint URL for a base URL.
    pub fn url(self, base: &str) -> String {
        let base = base.trim_end_matches('/');
        match self {
            // Ollama's native API lives at the root: a base URL copied from
            // an OpenAI-compatible setup (`…/v1`) must not give `/v1/api/chat`.
            Wire::OllamaGenerate => format!("{}/api/generate", base.trim_end_matches("/v1")),
            Wire::OllamaChat => format!("{}/api/chat", base.trim_end_matches("/v1")),
            Wire::OpenAi if base.ends_with("/v1") => format!("{base}/chat/completions"),
            Wire::OpenAi => format!("{base}/v1/chat/completions"),
            Wire::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
            Wire::Anthropic => format!("{base}/v1/messages"),
        }
    }
}

/// A resolved model endpoint: everything one HTTP call needs.
#[derive(Debug, Clone, PartialEq, Encode, Decode)]
pub struct Endpoint {
    /// Wire format.
    pub wire: Wire,
    /// Full URL of the endpoint.
    pub url: String,
    /// Model name as the endpoint knows it.
    pub model: String,
    /// API key, if any.
    pub api_key: Option<Secret>,
    /// Ask for a streamed answer.
    pub stream: bool,
    /// Sampling temperature.
    pub temperature: f64,
    /// Maximum tokens to generate.
    pub max_tokens: u32,
    /// TCP connect timeout, ms.
    pub connect_timeout_ms: u64,
    /// Whole-request timeout per try, ms.
    pub timeout_ms: u64,
    /// Further tries after a retryable failure.
    pub retries: u32,
    /// Largest body accepted, bytes.
    pub max_response_bytes: u64,
    /// When set, the host of `url` resolves to this address without DNS
    /// (the jailed worker cannot read `/etc/resolv.conf`).
    pub pinned_addr: Option<SocketAddr>,
    /// Sampling seed, when set (Ollama `options.seed`, OpenAI `seed`).
    pub seed: Option<u64>,
}

/// Who says a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Encode, Decode)]
pub enum Role {
    /// The system prompt.
    System,
    /// The user (the intent, the correction request).
    User,
    /// The model's earlier answer.
    Assistant,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct Message {
    /// Speaker.
    pub role: Role,
    /// Text.
    pub content: String,
}

impl Message {
    /// Shorthand constructor.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
        }
    }
}

/// What the inferencer worker receives: a conversation and where to send it.
#[derive(Debug, Clone, PartialEq, Encode, Decode)]
pub struct Request {
    /// The endpoint.
    pub endpoint: Endpoint,
    /// The conversation (system first).
    pub messages: Vec<Message>,
    /// Overrides the endpoint's temperature (the correction retry runs warmer).
    pub temperature: Option<f64>,
}

/// What the model answered.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct Generation {
    /// The raw answer text (before cleaning).
    pub text: String,
    /// Time from the first try to the answer, ms.
    pub elapsed_ms: u64,
    /// Tries used (1 = no retry).
    pub tries: u32,
    /// Prompt tokens, when the endpoint reports them (Ollama
    /// `prompt_eval_count`, OpenAI `usage.prompt_tokens`, Anthropic
    /// `usage.input_tokens`; not for streamed answers).
    pub prompt_tokens: Option<u64>,
}

/// Why a model call produced no text. Messages name the URL (without query
/// or credentials), never the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Encode, Decode)]
#[non_exhaustive]
pub enum InferError {
    /// The request could not be built (bad URL, bad settings).
    #[error("bad model request for {url}: {detail}")]
    BadRequest {
        /// Endpoint.
        url: String,
        /// What is wrong.
        detail: String,
    },
    /// No connection could be made.
    #[error("cannot reach the model at {url}: {detail}")]
    Unreachable {
        /// Endpoint.
        url: String,
        /// The transport's reason.
        detail: String,
    },
    /// The endpoint did not answer in time.
    #[error("the model at {url} did not answer: gave up after {timeout_ms} ms")]
    Timeout {
        /// Endpoint.
        url: String,
        /// Time spent on the call, all tries included.
        timeout_ms: u64,
    },
    /// A non-success HTTP status.
    #[error("the model at {url} answered HTTP {status}: {body}")]
    Status {
        /// Endpoint.
        url: String,
        /// HTTP status.
        status: u16,
        /// The start of the body (bounded).
        body: String,
    },
    /// The body exceeded the size cap.
    #[error("the answer from {url} exceeded {limit} bytes")]
    TooLarge {
        /// Endpoint.
        url: String,
        /// The cap.
        limit: u64,
    },
    /// The body was not what the wire format promises.
    #[error("unusable answer from {url}: {detail}")]
    Garbage {
        /// Endpoint.
        url: String,
        /// What was wrong.
        detail: String,
    },
    /// The endpoint reported an error inside a 200 answer.
    #[error("the model at {url} reported an error: {detail}")]
    Remote {
        /// Endpoint.
        url: String,
        /// Its message (bounded).
        detail: String,
    },
    /// The worker that should have called the model failed.
    #[error("inferencer worker failed: {0}")]
    Worker(String),
}

impl InferError {
    fn retryable(&self) -> bool {
        match self {
            InferError::Unreachable { .. } | InferError::Timeout { .. } => true,
            InferError::Status { status, .. } => *status >= 500 || *status == 429,
            _ => false,
        }
    }
}

/// The URL without query, fragment or user info, for messages.
pub fn display_url(url: &str) -> String {
    let cut = url.find(['?', '#']).map_or(url, |i| &url[..i]);
    match cut.split_once("://") {
        Some((scheme, rest)) => {
            let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
            format!("{scheme}://{rest}")
        }
        None => cut.to_string(),
    }
}

fn bounded(s: &str, n: usize) -> String {
    let mut out: String = s.chars().take(n).collect();
    if s.chars().nth(n).is_some() {
        out.push('…');
    }
    out
}

/// Send the conversation to the endpoint and return the model's text.
///
/// # Errors
/// [`InferError`] after the last try; never hangs past
/// `(retries + 1) * timeout + retries * MAX_BACKOFF`.
pub fn generate(req: &Request) -> Result<Generation, InferError> {
    let start = Instant::now();
    let mut tries = 0u32;
    match generate_tries(req, start, &mut tries) {
        // An Ollama-compatible server without this endpoint: try the other
        // native one (`/api/generate` ↔ `/api/chat`) once.
        Err(InferError::Status {
            status: 404 | 405, ..
        }) if matches!(req.endpoint.wire, Wire::OllamaGenerate | Wire::OllamaChat) => {
            let mut alt = req.clone();
            let (from, to, wire) = match req.endpoint.wire {
                Wire::OllamaGenerate => ("/api/generate", "/api/chat", Wire::OllamaChat),
                _ => ("/api/chat", "/api/generate", Wire::OllamaGenerate),
            };
            let Some(base) = req.endpoint.url.strip_suffix(from) else {
                return generate_tries(req, start, &mut tries);
            };
            alt.endpoint.url = format!("{base}{to}");
            alt.endpoint.wire = wire;
            tracing::debug!(url = %display_url(&alt.endpoint.url), "endpoint not found; trying the other Ollama API");
            generate_tries(&alt, start, &mut tries)
        }
        other => other,
    }
}

fn generate_tries(
    req: &Request,
    start: Instant,
    tries: &mut u32,
) -> Result<Generation, InferError> {
    let ep = &req.endpoint;
    let url = display_url(&ep.url);
    let addrs = match ep.pinned_addr {
        Some(a) => vec![a],
        None => resolve(&ep.url)?,
    };
    let agent = agent(ep, &addrs);
    let body = request_body(req).to_string();
    let mut own_tries = 0u32;
    let mut backoff = Duration::from_millis(200);
    loop {
        own_tries += 1;
        *tries += 1;
        let mut retry_after = None;
        match try_once(&agent, ep, &url, body.as_bytes(), &mut retry_after) {
            Ok((text, prompt_tokens)) => {
                return Ok(Generation {
                    text,
                    elapsed_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
                    tries: *tries,
                    prompt_tokens,
                })
            }
            Err(e) if e.retryable() && own_tries <= ep.retries => {
                tracing::debug!(url = %url, try_ = own_tries, error = %e, "model call failed; retrying");
                // Retry-After (seconds) is honoured, within the backoff cap.
                let wait = retry_after
                    .map(|s| Duration::from_secs(s).min(MAX_BACKOFF))
                    .unwrap_or(backoff)
                    .max(backoff);
                std::thread::sleep(wait);
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            Err(InferError::Timeout { url, .. }) => {
                // Report the time really spent (all tries), not one try's budget.
                return Err(InferError::Timeout {
                    url,
                    timeout_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
                });
            }
            Err(e) => return Err(e),
        }
    }
}

/// The host and port of an `http://` or `https://` URL.
fn host_port(url: &str) -> Result<(String, u16), String> {
    let uri: ureq::http::Uri = url.parse().map_err(|e| format!("bad URL: {e}"))?;
    let port = match uri.scheme_str() {
        Some("http") => 80,
        Some("https") => 443,
        _ => return Err(format!("{url:?} is not an http:// or https:// URL")),
    };
    let authority = uri.authority().ok_or("missing host")?;
    if authority.host().is_empty() {
        return Err("missing host".into());
    }
    // `port_u16` is None both without a port and for one that is no u16.
    let hostport = authority
        .as_str()
        .rsplit_once('@')
        .map_or(authority.as_str(), |(_, h)| h);
    let after_host = hostport.rsplit(']').next().unwrap_or("");
    let port = match (after_host.rsplit_once(':'), authority.port_u16()) {
        (_, Some(p)) => p,
        (None, None) => port,
        (Some((_, bad)), None) => return Err(format!("bad port {bad:?}")),
    };
    Ok((authority.host().to_string(), port))
}

/// Resolve the endpoint URL's host to socket addresses, IPv4 first (Ollama
/// listens on 127.0.0.1 while `localhost` may resolve to `::1` first).
/// The supervisor calls this before it starts the jailed worker, which has
/// no resolver files and connects only to the address it is given.
///
/// # Errors
/// [`InferError::BadRequest`] for a URL that is not `http(s)://host…`,
/// [`InferError::Unreachable`] when the name does not resolve.
pub fn resolve(url: &str) -> Result<Vec<SocketAddr>, InferError> {
    let shown = display_url(url);
    let (host, port) = host_port(url).map_err(|detail| InferError::BadRequest {
        url: shown.clone(),
        detail,
    })?;
    // `host` keeps an IPv6 literal's brackets, which `ToSocketAddrs` wants.
    let mut addrs: Vec<SocketAddr> = format!("{host}:{port}")
        .to_socket_addrs()
        .map_err(|e| InferError::Unreachable {
            url: shown.clone(),
            detail: format!("cannot resolve {host}: {e}"),
        })?
        .collect();
    addrs.sort_by_key(|a| !a.is_ipv4());
    if addrs.is_empty() {
        return Err(InferError::Unreachable {
            url: shown,
            detail: format!("{host} has no address"),
        });
    }
    Ok(addrs)
}

/// ureq's name resolution replaced by addresses resolved beforehand: by the
/// supervisor for the jailed worker (which has no resolver files), or by
/// [`resolve`] in-process. It never looks a name up, so ureq's own
/// resolver, which starts a thread when a timeout is set, never runs (the
/// jailed worker has `RLIMIT_NPROC` 0).
#[derive(Debug)]
struct Pinned(Vec<SocketAddr>);

impl Resolver for Pinned {
    fn resolve(
        &self,
        _uri: &ureq::http::Uri,
        _config: &ureq::config::Config,
        _timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let mut out = self.empty();
        for a in &self.0 {
            // At most 16 fit; the rest are dropped, never a panic.
            if out.try_push(*a).is_err() {
                break;
            }
        }
        if out.is_empty() {
            return Err(ureq::Error::HostNotFound);
        }
        Ok(out)
    }
}

/// One agent per call: plain TCP and rustls (ring, webpki roots), no proxy
/// from the environment, no redirects, no pooled connections, the whole
/// try (connect, request, answer) bounded by the endpoint's timeout.
fn agent(ep: &Endpoint, addrs: &[SocketAddr]) -> ureq::Agent {
    let tls = TlsConfig::builder()
        .provider(TlsProvider::Rustls)
        .root_certs(RootCerts::WebPki)
        .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .build();
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .proxy(None)
        .max_redirects(0)
        .max_idle_connections(0)
        .max_response_header_size(MAX_HEADER_BYTES)
        .user_agent(concat!("lackpy/", env!("CARGO_PKG_VERSION")))
        .timeout_global(Some(Duration::from_millis(ep.timeout_ms.max(1))))
        .timeout_connect(Some(Duration::from_millis(ep.connect_timeout_ms.max(1))))
        .tls_config(tls)
        .build();
    let connector = TcpConnector::default().chain(RustlsConnector::default());
    ureq::Agent::with_parts(config, connector, Pinned(addrs.to_vec()))
}

/// Largest response header block accepted. Why: real model servers send
/// well under 4 KiB of headers; more is a hostile or broken endpoint.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// Where a transport error happened: it decides what an early end means.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Connecting, sending, waiting for the status line and headers.
    Head,
    /// Reading the body.
    Body,
}

/// A ureq error as an [`InferError`]: connection failures are
/// `Unreachable` (retried), deadlines `Timeout`, a broken or non-HTTP
/// answer `Garbage` with what was wrong.
fn transport_error(e: ureq::Error, url: &str, ep: &Endpoint, phase: Phase) -> InferError {
    use std::io::ErrorKind as K;
    use ureq_proto::Error as P;
    let unreachable = |detail: String| InferError::Unreachable {
        url: url.to_string(),
        detail,
    };
    let garbage = |detail: String| InferError::Garbage {
        url: url.to_string(),
        detail,
    };
    match e {
        ureq::Error::Timeout(_) => InferError::Timeout {
            url: url.to_string(),
            timeout_ms: ep.timeout_ms,
        },
        ureq::Error::Io(io) => match io.kind() {
            K::TimedOut | K::WouldBlock => InferError::Timeout {
                url: url.to_string(),
                timeout_ms: ep.timeout_ms,
            },
            K::UnexpectedEof if phase == Phase::Head => {
                garbage("the server closed the connection without answering".into())
            }
            K::UnexpectedEof => garbage("connection closed before the end of the body".into()),
            K::ConnectionRefused
            | K::ConnectionReset
            | K::ConnectionAborted
            | K::BrokenPipe
            | K::HostUnreachable
            | K::NetworkUnreachable
            | K::NetworkDown
            | K::AddrNotAvailable
            | K::PermissionDenied
                if phase == Phase::Head =>
            {
                unreachable(io.to_string())
            }
            _ => garbage(format!("reading the answer: {io}")),
        },
        ureq::Error::HostNotFound => unreachable("the host has no address".into()),
        ureq::Error::ConnectionFailed => unreachable("connection failed".into()),
        ureq::Error::Tls(m) => unreachable(format!("TLS: {m}")),
        ureq::Error::Rustls(t) => unreachable(format!("TLS: {t}")),
        ureq::Error::BodyExceedsLimit(limit) => InferError::TooLarge {
            url: url.to_string(),
            limit,
        },
        ureq::Error::LargeResponseHeader(..)
        | ureq::Error::Protocol(P::HttpParseTooManyHeaders) => {
            garbage("response headers too large".into())
        }
        ureq::Error::Protocol(p @ (P::ChunkLenNotAscii | P::ChunkLenNotANumber)) => {
            garbage(format!("bad chunk size ({p})"))
        }
        ureq::Error::Protocol(
            p @ (P::HttpParseFail(_) | P::BadHeader(_) | P::UnsupportedVersion),
        ) => garbage(format!("not an HTTP answer ({p})")),
        ureq::Error::BadUri(m) => InferError::BadRequest {
            url: url.to_string(),
            detail: m,
        },
        ureq::Error::Http(h) => InferError::BadRequest {
            url: url.to_string(),
            detail: h.to_string(),
        },
        other => garbage(other.to_string()),
    }
}

fn request_body(req: &Request) -> Value {
    let ep = &req.endpoint;
    let temperature = req.temperature.unwrap_or(ep.temperature);
    let msgs = |filter_system: bool| -> Vec<Value> {
        req.messages
            .iter()
            .filter(|m| !(filter_system && m.role == Role::System))
            .map(|m| json!({"role": m.role.as_str(), "content": m.content}))
            .collect()
    };
    let system: String = req
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n\n");
    let mut options = json!({"temperature": temperature, "num_predict": ep.max_tokens});
    if let (Some(seed), Some(o)) = (ep.seed, options.as_object_mut()) {
        o.insert("seed".into(), json!(seed));
    }
    let mut body = match ep.wire {
        Wire::OllamaGenerate => {
            let (examples, turns) = split_examples(&req.messages);
            json!({
                "model": ep.model,
                "system": generate_system(&system, examples),
                "prompt": flatten_conversation(turns),
                "stream": ep.stream,
                "options": options,
            })
        }
        Wire::OllamaChat => json!({
            "model": ep.model,
            "messages": msgs(false),
            "stream": ep.stream,
            "options": options,
        }),
        Wire::OpenAi => json!({
            "model": ep.model,
            "messages": msgs(false),
            "stream": ep.stream,
            "temperature": temperature,
            "max_tokens": ep.max_tokens,
        }),
        Wire::Anthropic => json!({
            "model": ep.model,
            "system": system,
            "messages": msgs(true),
            "stream": ep.stream,
            "temperature": temperature.min(1.0),
            "max_tokens": ep.max_tokens,
        }),
    };
    if let (Wire::OpenAi, Some(seed), Some(o)) = (ep.wire, ep.seed, body.as_object_mut()) {
        o.insert("seed".into(), json!(seed));
    }
    body
}

/// A conversation split for `/api/generate`: its leading example turns
/// (after the system turns, each user turn answered by an assistant turn,
/// with a turn after the last pair: the task itself) and the turns after
/// them.
fn split_examples(messages: &[Message]) -> (&[Message], &[Message]) {
    let start = messages
        .iter()
        .position(|m| m.role != Role::System)
        .unwrap_or(messages.len());
    let rest = &messages[start..];
    let mut n = 0;
    while n + 2 < rest.len()
        && rest.get(n).is_some_and(|m| m.role == Role::User)
        && rest.get(n + 1).is_some_and(|m| m.role == Role::Assistant)
    {
        n += 2;
    }
    rest.split_at(n)
}

/// `/api/generate` has no turns: the example turns (task, cell) go into
/// the system text as example cells, as a one-prompt wire expects.
fn generate_system(system: &str, examples: &[Message]) -> String {
    if examples.is_empty() {
        return system.to_string();
    }
    let mut s = format!("{}\n\nExample cells:\n", system.trim_end());
    for pair in examples.chunks(2) {
        if let [task, cell] = pair {
            s.push_str(&format!(
                "\n{}\n{}\n",
                task.content.trim(),
                cell.content.trim_end()
            ));
        }
    }
    s
}

/// `/api/generate` takes one prompt: the non-system turns, labelled when
/// there is more than one.
fn flatten_conversation(messages: &[Message]) -> String {
    let turns: Vec<&Message> = messages.iter().filter(|m| m.role != Role::System).collect();
    if let [only] = turns.as_slice() {
        return only.content.clone();
    }
    let mut out = String::new();
    for m in turns {
        let label = if m.role == Role::Assistant {
            "Your previous cell"
        } else {
            "Request"
        };
        out.push_str(&format!("### {label}:\n{}\n\n", m.content));
    }
    out
}

fn try_once(
    agent: &ureq::Agent,
    ep: &Endpoint,
    url: &str,
    body: &[u8],
    retry_after: &mut Option<u64>,
) -> Result<(String, Option<u64>), InferError> {
    let mut post = agent
        .post(&ep.url)
        .header("Content-Type", "application/json");
    if let Some(k) = &ep.api_key {
        post = if ep.wire == Wire::Anthropic {
            post.header("x-api-key", k.expose())
        } else {
            post.header("Authorization", format!("Bearer {}", k.expose()))
        };
    }
    if ep.wire == Wire::Anthropic {
        post = post.header("anthropic-version", "2023-06-01");
    }
    let resp = post
        .send(body)
        .map_err(|e| transport_error(e, url, ep, Phase::Head))?;
    let status = resp.status().as_u16();
    // Seconds only; an HTTP date is ignored (the backoff applies).
    *retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let body_err = |e: std::io::Error| transport_error(e.into(), url, ep, Phase::Body);
    let mut reader = resp
        .into_body()
        .into_with_config()
        .limit(ep.max_response_bytes)
        .reader();
    if !(200..300).contains(&status) {
        let mut buf = Vec::new();
        // Read at most 4 KiB of an error body.
        let _ = (&mut reader).take(4096).read_to_end(&mut buf);
        let mut text = String::from_utf8_lossy(&buf).to_string();
        if let Some(k) = ep.api_key.as_ref().filter(|k| !k.expose().is_empty()) {
            // An endpoint that echoes the key must not put it into our errors.
            text = text.replace(k.expose(), "***");
        }
        return Err(InferError::Status {
            url: url.to_string(),
            status,
            body: bounded(text.trim(), 300),
        });
    }
    if !ep.stream {
        let mut buf = Vec::new();
        reader.read_to_end(&mut buf).map_err(body_err)?;
        let v: Value = match serde_json::from_slice(&buf) {
            Ok(v) => v,
            Err(e) => {
                // A server that streams although asked not to: read it as a stream.
                let text = String::from_utf8_lossy(&buf);
                let mut out = String::new();
                let mut done = false;
                let mut ok = true;
                for line in text.lines() {
                    match stream_line(ep.wire, line.trim(), &mut out, url) {
                        Ok(d) => done |= d,
                        Err(_) => {
                            ok = false;
                            break;
                        }
                    }
                }
                if ok && (done || !out.is_empty()) {
                    return Ok((out, None));
                }
                return Err(InferError::Garbage {
                    url: url.to_string(),
                    detail: format!("not JSON ({e}): {}", bounded(&text, 120)),
                });
            }
        };
        let tokens = v
            .get("prompt_eval_count")
            .or_else(|| v.pointer("/usage/prompt_tokens"))
            .or_else(|| v.pointer("/usage/input_tokens"))
            .and_then(Value::as_u64);
        return extract_whole(ep.wire, &v, url).map(|t| (t, tokens));
    }
    // Streaming: NDJSON (Ollama) or SSE (OpenAI, Anthropic), line by line,
    // each line as it arrives (the cap bounds the total).
    let mut text = String::new();
    let mut line = Vec::new();
    let mut lines = std::io::BufReader::new(reader);
    loop {
        line.clear();
        let n = lines.read_until(b'\n', &mut line).map_err(body_err)?;
        if n == 0 {
            break;
        }
        if stream_line(
            ep.wire,
            String::from_utf8_lossy(&line).trim(),
            &mut text,
            url,
        )? {
            return Ok((text, None));
        }
    }
    if text.is_empty() {
        return Err(InferError::Garbage {
            url: url.to_string(),
            detail: "the stream ended without an answer".into(),
        });
    }
    Ok((text, None))
}

/// An endpoint's own error inside a 200 answer (`{"error": "..."}` or
/// `{"error": {"message": "..."}}`, whole or in a stream line) as
/// [`InferError::Remote`].
fn check_remote(v: &Value, url: &str) -> Result<(), InferError> {
    let Some(e) = v.get("error") else {
        return Ok(());
    };
    let msg = e
        .as_str()
        .map(str::to_string)
        .or_else(|| e.get("message").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| e.to_string());
    Err(InferError::Remote {
        url: url.to_string(),
        detail: bounded(&msg, 300),
    })
}

fn extract_whole(wire: Wire, v: &Value, url: &str) -> Result<String, InferError> {
    check_remote(v, url)?;
    let text = match wire {
        Wire::OllamaGenerate => v
            .get("response")
            .and_then(Value::as_str)
            .map(str::to_string),
        Wire::OllamaChat => v
            .pointer("/message/content")
            .and_then(Value::as_str)
            .map(str::to_string),
        Wire::OpenAi => v
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .map(str::to_string),
        Wire::Anthropic => v.get("content").and_then(Value::as_array).map(|blocks| {
            blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<String>()
        }),
    };
    text.ok_or_else(|| InferError::Garbage {
        url: url.to_string(),
        detail: format!("no answer text in {}", bounded(&v.to_string(), 120)),
    })
}

/// Fold one stream line into `text`; true when the stream says it is done.
fn stream_line(wire: Wire, line: &str, text: &mut String, url: &str) -> Result<bool, InferError> {
    if line.is_empty() {
        return Ok(false);
    }
    let garbage = |detail: String| InferError::Garbage {
        url: url.to_string(),
        detail,
    };
    match wire {
        Wire::OllamaGenerate | Wire::OllamaChat => {
            let v: Value = serde_json::from_str(line)
                .map_err(|e| garbage(format!("bad stream line ({e}): {}", bounded(line, 120))))?;
            check_remote(&v, url)?;
            let piece = if wire == Wire::OllamaGenerate {
                v.get("response")
            } else {
                v.pointer("/message/content")
            };
            if let Some(p) = piece.and_then(Value::as_str) {
                text.push_str(p);
            }
            Ok(v.get("done").and_then(Value::as_bool) == Some(true))
        }
        Wire::OpenAi | Wire::Anthropic => {
            // SSE: only `data:` lines carry payload; `event:`, `id:`, comments are skipped.
            let Some(data) = line.strip_prefix("data:") else {
                return Ok(false);
            };
            let data = data.trim();
            if data == "[DONE]" {
                return Ok(true);
            }
            let v: Value = serde_json::from_str(data)
                .map_err(|e| garbage(format!("bad stream event ({e}): {}", bounded(data, 120))))?;
            check_remote(&v, url)?;
            if wire == Wire::OpenAi {
                if let Some(p) = v
                    .pointer("/choices/0/delta/content")
                    .and_then(Value::as_str)
                {
                    text.push_str(p);
                }
                Ok(false)
            } else {
                match v.get("type").and_then(Value::as_str) {
                    Some("content_block_delta") => {
                        if let Some(p) = v.pointer("/delta/text").and_then(Value::as_str) {
                            text.push_str(p);
                        }
                        Ok(false)
                    }
                    Some("message_stop") => Ok(true),
                    _ => Ok(false),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The supervisor's resolution: literal addresses without DNS, the
    /// scheme's port by default, IPv4 first, and clear errors for what is
    /// not an http(s) URL with a host.
    #[test]
    fn resolve_before_the_jail() {
        let ok = |u: &str| resolve(u).unwrap_or_else(|e| panic!("{u}: {e}"));
        assert_eq!(
            ok("http://127.0.0.1/api"),
            ["127.0.0.1:80".parse().expect("addr")]
        );
        assert_eq!(
            ok("https://127.0.0.1"),
            ["127.0.0.1:443".parse().expect("addr")]
        );
        assert_eq!(
            ok("http://[::1]:8080/x"),
            ["[::1]:8080".parse().expect("addr")]
        );
        let v4_first = ok("http://localhost:11434");
        if let Some(first_v6) = v4_first.iter().position(|a| a.is_ipv6()) {
            assert!(
                v4_first[first_v6..].iter().all(|a| a.is_ipv6()),
                "{v4_first:?}"
            );
        }
        for bad in ["ftp://h/x", "http:///x", "not a url", "http://h:99999/"] {
            assert!(
                matches!(resolve(bad), Err(InferError::BadRequest { .. })),
                "{bad}: {:?}",
                resolve(bad)
            );
        }
    }

    /// ureq's resolver is replaced: the pinned addresses are all it returns
    /// (at most 16), whatever the URL's host.
    #[test]
    fn pinned_resolver_never_looks_names_up() {
        let uri: ureq::http::Uri = "http://model.invalid:1/x".parse().expect("uri");
        let config = ureq::config::Config::default();
        let timeout = NextTimeout {
            after: ureq::unversioned::transport::time::Duration::NotHappening,
            reason: ureq::Timeout::Global,
            per_read: None,
            per_write: None,
        };
        let addrs: Vec<SocketAddr> = (0..20u16)
            .map(|p| SocketAddr::from(([127, 0, 0, 1], 1000 + p)))
            .collect();
        let got = Pinned(addrs.clone())
            .resolve(&uri, &config, timeout)
            .map(|r| r.iter().copied().collect::<Vec<_>>());
        assert_eq!(got.ok(), Some(addrs[..16].to_vec()));
        assert!(matches!(
            Pinned(Vec::new()).resolve(&uri, &config, timeout),
            Err(ureq::Error::HostNotFound)
        ));
    }

    #[test]
    fn urls() {
        assert_eq!(
            Wire::OpenAi.url("http://h:1/v1/"),
            "http://h:1/v1/chat/completions"
        );
        assert_eq!(
            Wire::OpenAi.url("http://h:1"),
            "http://h:1/v1/chat/completions"
        );
        assert_eq!(
            Wire::Anthropic.url("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(display_url("https://user:pw@h/x?key=1"), "https://h/x");
    }

    #[test]
    fn stream_lines() {
        let mut t = String::new();
        assert_eq!(
            stream_line(
                Wire::OllamaChat,
                r#"{"message":{"content":"ab"},"done":false}"#,
                &mut t,
                "u"
            )
            .ok(),
            Some(false)
        );
        assert_eq!(
            stream_line(
                Wire::OllamaChat,
                r#"{"message":{"content":"c"},"done":true}"#,
                &mut t,
                "u"
            )
            .ok(),
            Some(true)
        );
        assert_eq!(t, "abc");
        let mut t = String::new();
        assert_eq!(
            stream_line(Wire::OpenAi, "event: x", &mut t, "u").ok(),
            Some(false)
        );
        assert_eq!(
            stream_line(
                Wire::OpenAi,
                r#"data: {"choices":[{"delta":{"content":"x"}}]}"#,
                &mut t,
                "u"
            )
            .ok(),
            Some(false)
        );
        assert_eq!(
            stream_line(Wire::OpenAi, "data: [DONE]", &mut t, "u").ok(),
            Some(true)
        );
        assert_eq!(t, "x");
        assert!(stream_line(Wire::OpenAi, "data: {nope", &mut t, "u").is_err());
        assert!(matches!(
            stream_line(
                Wire::OllamaGenerate,
                r#"{"error":"model not found"}"#,
                &mut t,
                "u"
            ),
            Err(InferError::Remote { .. })
        ));
    }

    #[test]
    fn generate_prompt_flattens_retry() {
        let ms = vec![
            Message::new(Role::System, "sys"),
            Message::new(Role::User, "do x"),
            Message::new(Role::Assistant, "bad()"),
            Message::new(Role::User, "fix it"),
        ];
        let p = flatten_conversation(&ms);
        assert!(
            p.contains("do x") && p.contains("bad()") && p.contains("fix it") && !p.contains("sys")
        );
    }

    #[test]
    fn generate_takes_example_turns_into_the_system_text() {
        let ms = vec![
            Message::new(Role::System, "sys"),
            Message::new(Role::User, "# Task: one"),
            Message::new(Role::Assistant, "cell_one()"),
            Message::new(Role::User, "# Task: two"),
            Message::new(Role::Assistant, "cell_two()"),
            Message::new(Role::User, "# Task: mine"),
        ];
        let (examples, turns) = split_examples(&ms);
        assert_eq!(
            generate_system("sys", examples),
            "sys\n\nExample cells:\n\n# Task: one\ncell_one()\n\n# Task: two\ncell_two()\n"
        );
        assert_eq!(flatten_conversation(turns), "# Task: mine");
        // No examples: unchanged.
        let plain = vec![
            Message::new(Role::System, "sys"),
            Message::new(Role::User, "u"),
        ];
        let (examples, turns) = split_examples(&plain);
        assert_eq!(generate_system("sys", examples), "sys");
        assert_eq!(flatten_conversation(turns), "u");
        // A conversation ending in an assistant turn keeps its last pair.
        let open = vec![
            Message::new(Role::User, "a"),
            Message::new(Role::Assistant, "b"),
        ];
        assert!(split_examples(&open).0.is_empty());
    }
}
