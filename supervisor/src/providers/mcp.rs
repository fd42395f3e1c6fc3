//! MCP servers as tool sources (`[mcp_servers.NAME]`).
//!
//! Each configured stdio server is started as a child of this process, in a
//! jail of its own ([`crate::childjail`]; what it may read and write is
//! derived in [`jail_spec`]), with its environment cleared except for the
//! handful of variables the MCP SDKs pass by default and the table's own
//! `env`; cwd = the workspace; stdin/stdout piped for newline-delimited
//! JSON-RPC; stderr inherited. It is spoken to as
//! an MCP client with `rmcp`. [`discover`] asks every server for its tools
//! once per process and turns them into [`ToolSpec`]s with provider `mcp`;
//! [`call`] answers an authorized program call with `tools/call`.
//!
//! Grades come from the tool annotations unless
//! `[mcp_servers.NAME.tools.TOOL] grade = {w, d}` overrides them (see
//! [`grade_from_annotations`]). Annotations are hints from a server the
//! operator chose to configure; the override is how an operator corrects them.
//!
//! Failures never break a run: a server that fails to start or to list is
//! skipped with one warning on stderr; a call that outlives its timeout
//! (`timeout_seconds` in the server's table, default 10 s) is a `Timeout`
//! tool error and the server is killed (the next call starts a new one); a
//! server found dead before a call is restarted once; one that dies during a
//! call, or answers `isError: true`, is a `ToolFailed` tool error.
//!
//! A `transport = "http"` server is no process: the supervisor itself
//! connects to its `url` with rmcp's Streamable HTTP client (reqwest over
//! rustls with ring; see [`connect_http`]), sending its `headers` with
//! `${VAR}` expanded from this process's environment when connecting.
//! No jail applies to that connection; what it trusts is the server's
//! answers, which are bounded like a stdio server's (response and event
//! sizes, tool count, list pages, every request's timeout). Header values
//! are never logged, put in an error, a trace, `doctor` output or the
//! tool-list cache (its identity holds a SHA-256 of them).
//!
//! All MCP I/O runs on one process-wide tokio runtime (one worker thread);
//! callers on ordinary threads wait on a channel, so this works the same
//! from the CLI, from `lackpy mcp`'s blocking threads and from `serve`.

use super::child::{config_path, workspace_path};
use super::mcp_lines::{self, ServerProcess};
use super::value::from_plain;
use crate::call::RunContext;
use crate::childjail::{find_on_path, install_root, program_roots, project_root, Jail, Spec};
use crate::json::to_json;
use crate::tools::fs::Workspace;
use lackpy_policy::config::{
    ArgSpec, Config, Headers, McpServer, McpTool, ToolSpec, WorkspaceAccess,
};
use lackpy_policy::lang::Grade;
use lackpy_policy::wire::{Data, ToolFailure};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, PaginatedRequestParams, Tool, ToolAnnotations,
};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Default per-call timeout when the server's table sets no `timeout_seconds`.
/// Why 10 s: it is the default wall-clock limit of a whole run (a tool call
/// counts against it), and the `command` provider's default.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Upper bound on starting a server and listing its tools.
/// Why 10 s: every CLI invocation with the server configured waits for it;
/// a real server starts in well under a second.
pub const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// Most tools taken from one server (a server listing more is truncated).
const MAX_TOOLS_PER_SERVER: usize = 512;

/// Most `tools/list` pages asked of one server (a server that keeps
/// answering with a next cursor is cut off there).
const MAX_LIST_PAGES: usize = 64;

/// Most bytes of tool listings (each tool's JSON: name, description,
/// schemas) kept from one server over all its `tools/list` pages.
/// Why 16 MiB: a page is bounded (16 MiB a line or response) but
/// [`MAX_LIST_PAGES`] of them were not: 64 pages of one tool with a 15 MB
/// description were all held (~1 GiB); honest lists are a few hundred KiB.
const MAX_LIST_BYTES: usize = 16 * 1024 * 1024;

/// Most JSON values (as [`mcp_lines::count_values`] counts them) of tool
/// listings kept from one server over all its pages: what one line may
/// carry. Why: [`MAX_LIST_BYTES`] of small values (`0,0,…` in schemas,
/// each page under the per-line count) were all held as `serde_json`
/// values, 650 MiB; honest listings hold a few thousand.
pub const MAX_LIST_VALUES: usize = mcp_lines::MAX_LINE_VALUES;

/// Largest JSON response or SSE event accepted from a remote server.
/// Why 16 MiB: twice the largest result a run may return (8 MiB) and more
/// than any honest tool list; a bigger answer is an error, never buffered.
const MAX_REMOTE_RESPONSE: usize = 16 * 1024 * 1024;

/// Longest error body kept from a remote server (for the message only).
const MAX_REMOTE_ERROR_BODY: usize = 2048;

/// Largest accepted `timeout_seconds` (one hour).
const MAX_TIMEOUT_SECONDS: u64 = 3600;

/// Environment variables passed through to a server (the set the official
/// MCP SDKs inherit by default), before the table's own `env`.
const INHERITED_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG"];

/// Why a server could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpSourceError {
    /// The table cannot be used (no command, http transport, ...).
    #[error("{0}")]
    Config(String),
    /// The process could not be started in its jail.
    #[error("cannot start the server in its jail: {0}")]
    Spawn(std::io::Error),
    /// The MCP handshake or a request failed.
    #[error("{0}")]
    Protocol(String),
    /// The server did not answer in time.
    #[error("the server did not answer within {0:?}")]
    Timeout(Duration),
    /// The client runtime is unavailable.
    #[error("the MCP client runtime could not be started: {0}")]
    Runtime(String),
    /// The run the call belongs to was cancelled; the call was dropped.
    #[error("the run was cancelled")]
    Cancelled,
}

/// Which process (or remote server) a tool lives in: one server table run
/// in one workspace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ServerKey {
    name: String,
    /// `url` of an http server (empty for stdio).
    url: String,
    /// `headers` of an http server, as written (`${VAR}` unexpanded;
    /// `Debug` shows names only).
    headers: Headers,
    command: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    workspace: PathBuf,
    network: bool,
    ws_access: WorkspaceAccess,
    read_paths: Vec<String>,
    write_paths: Vec<String>,
    memory_mb: Option<u64>,
    max_procs: Option<u64>,
    /// `trust_workspace_code`: a launcher that reads its working directory
    /// (the workspace) may start it (`launchers.rs`).
    trust_workspace_code: bool,
}

type Conn = Arc<RunningService<RoleClient, ()>>;

type Discovered = Result<Vec<Tool>, String>;

/// The MCP servers of one [`super::Providers`]: the client runtime, the
/// live connections, the tools each server listed, the warnings given.
/// Dropping it stops the servers.
#[derive(Default)]
pub struct McpServers {
    runtime: OnceLock<Result<tokio::runtime::Runtime, String>>,
    conns: Mutex<HashMap<ServerKey, Conn>>,
    discovered: Mutex<HashMap<ServerKey, (Discovered, Instant)>>,
    warned: Mutex<Vec<String>>,
    /// Serializes starting servers, so that concurrent front-end threads
    /// never start the same server twice.
    start_lock: Mutex<()>,
}

impl Drop for McpServers {
    fn drop(&mut self) {
        let conns = std::mem::take(self.conns.get_mut().unwrap_or_else(|p| p.into_inner()));
        if let Some(Ok(rt)) = self.runtime.take() {
            // The transports' cleanup spawns tasks: drop them inside the
            // runtime, then let it go without blocking (this may run on an
            // async thread). A server whose stdin closes exits.
            {
                let _in_rt = rt.enter();
                drop(conns);
            }
            rt.shutdown_background();
        }
    }
}

/// How long a failed discovery is remembered before a long-running front
/// end (`lackpy mcp`, `serve`) tries the server again.
const RETRY_FAILED_AFTER: Duration = Duration::from_secs(60);

fn runtime(st: &McpServers) -> Result<&tokio::runtime::Runtime, McpSourceError> {
    st.runtime
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("lackpy-mcp-client")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| McpSourceError::Runtime(e.clone()))
}

/// Run `fut` on the client runtime and wait for it from this (non-async)
/// thread, at most `timeout`.
fn run_on<T, F>(
    st: &McpServers,
    fut: F,
    timeout: Duration,
    cancel: Option<&AtomicBool>,
) -> Result<T, McpSourceError>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    let rt = runtime(st)?;
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let task = rt.spawn(async move {
        let r = tokio::time::timeout(timeout, fut).await;
        let _ = tx.send(r);
    });
    // The timeout runs inside the runtime; the margin here only guards
    // against a runtime that stopped answering altogether. With a cancel
    // flag, wait in slices of 50 ms and drop the call once it is set.
    let give_up = Instant::now() + timeout.saturating_add(Duration::from_secs(5));
    loop {
        let mut slice = give_up.saturating_duration_since(Instant::now());
        if cancel.is_some() {
            slice = slice.min(Duration::from_millis(50));
        }
        match rx.recv_timeout(slice) {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(_)) => return Err(McpSourceError::Timeout(timeout)),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if Instant::now() < give_up => {
                if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                    task.abort();
                    return Err(McpSourceError::Cancelled);
                }
            }
            Err(_) => return Err(McpSourceError::Timeout(timeout)),
        }
    }
}

fn key_of(name: &str, server: &McpServer, workspace: &Path) -> Result<ServerKey, McpSourceError> {
    if server.transport == "http" {
        let Some(url) = server.url.clone().filter(|u| !u.is_empty()) else {
            return Err(McpSourceError::Config("no `url` given".into()));
        };
        return Ok(ServerKey {
            name: name.to_string(),
            url,
            headers: server.headers.clone(),
            command: String::new(),
            args: Vec::new(),
            env: Vec::new(),
            workspace: workspace.to_path_buf(),
            network: false,
            ws_access: WorkspaceAccess::None,
            read_paths: Vec::new(),
            write_paths: Vec::new(),
            memory_mb: None,
            max_procs: None,
            trust_workspace_code: false,
        });
    }
    if server.transport != "stdio" {
        return Err(McpSourceError::Config(format!(
            "transport {:?} is not supported (\"stdio\" or \"http\", which is Streamable HTTP)",
            server.transport
        )));
    }
    let Some(command) = server.command.clone().filter(|c| !c.is_empty()) else {
        return Err(McpSourceError::Config("no `command` given".into()));
    };
    Ok(ServerKey {
        name: name.to_string(),
        url: String::new(),
        headers: Headers::default(),
        command,
        args: server.args.clone(),
        env: server
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        workspace: workspace.to_path_buf(),
        network: server.network,
        ws_access: server.workspace,
        read_paths: server.read_paths.clone(),
        write_paths: server.write_paths.clone(),
        memory_mb: server.memory_mb,
        max_procs: server.max_procs,
        trust_workspace_code: server.trust_workspace_code,
    })
}

/// `command` as given when it names a path, else found on our `PATH`
/// (the child's environment is cleared, so it cannot search for itself).
fn resolve_program(command: &str) -> PathBuf {
    find_on_path(command).unwrap_or_else(|| PathBuf::from(command))
}

/// Default data (heap) limit of a server, in MiB.
pub const DEFAULT_SERVER_MEMORY_MB: u64 = 2048;
/// Default number of processes a server may run.
pub const DEFAULT_SERVER_MAX_PROCS: u64 = 64;
/// Open files a server may hold.
const SERVER_NOFILE: u64 = 1024;

/// Every `write_paths` entry of `config`'s MCP servers, resolved as their
/// jails resolve them (for [`crate::trusted::register_write_paths`]).
pub fn write_paths_of(config: &Config, workspace: &Path) -> Vec<PathBuf> {
    all_servers(config)
        .into_iter()
        .flat_map(|(_, s)| s.write_paths.iter().map(|p| config_path(p, workspace)))
        .collect()
}

/// Every server of `config` in precedence order: the `[mcp_servers]`
/// tables by name, then the servers read from `[mcp] host_configs` in the
/// order of the files (a name already used is left out; the front end
/// that read the files reported it).
pub fn all_servers(config: &Config) -> Vec<(&String, &McpServer)> {
    let mut out: Vec<(&String, &McpServer)> = config.mcp_servers.iter().collect();
    for (name, s) in &config.mcp_host_servers {
        if !out.iter().any(|(n, _)| *n == name) {
            out.push((name, s));
        }
    }
    out
}

/// Whether `config` has any MCP server (its own or from a host config).
pub fn has_servers(config: &Config) -> bool {
    !config.mcp_servers.is_empty() || !config.mcp_host_servers.is_empty()
}

/// The header values of an http server, `${VAR}` expanded from this
/// process's environment.
///
/// # Errors
/// A config error naming the server, the header and the variable (never a
/// value).
fn expand_headers(name: &str, headers: &Headers) -> Result<Vec<(String, String)>, McpSourceError> {
    headers
        .0
        .iter()
        .map(|(h, template)| {
            lackpy_policy::config::remote::expand_vars(template, &|v| std::env::var(v).ok())
                .map(|v| (h.clone(), v))
                .map_err(|e| {
                    McpSourceError::Config(format!(
                        "config error: mcp_servers.{name}.headers.{h}: {e}"
                    ))
                })
        })
        .collect()
}

/// One line per http server of `config` whose headers name an unset
/// environment variable (`config error: mcp_servers.NAME.headers.H: the
/// environment variable V is not set`), for front ends that report a
/// configuration error rather than a missing tool.
pub fn header_errors(config: &Config) -> Vec<String> {
    all_servers(config)
        .into_iter()
        .filter(|(_, s)| s.transport == "http")
        .filter_map(|(n, s)| expand_headers(n, &s.headers).err())
        .map(|e| e.to_string())
        .collect()
}

/// The jail of one server (see [`crate::childjail`]): what it may read
/// follows from its command line, the rest from its table.
/// - read+execute: the program's installation and that of each `#!`
///   interpreter it names ([`program_roots`]: a script in a virtual
///   environment needs the Python it links to), every argument that names
///   an existing file (its directory and the project it belongs to,
///   [`project_root`]) or directory (itself, unless it is `/` or the home
///   directory) outside the workspace, and `read_paths`;
/// - read-only: what the arguments name inside the workspace;
/// - the workspace as `workspace` says (default: read-only);
/// - read/write: `write_paths`;
/// - the host's network only with `network = true`.
fn jail_spec(key: &ServerKey, program: &Path) -> Spec {
    let mut read_exec = program_roots(program);
    // A package installed with `npm install` runs from `node_modules/.bin/`
    // (or its `dist/`) and imports its dependencies from the
    // `node_modules` it lies in: all of it is part of the installation.
    read_exec.extend(node_modules_of(program));
    read_exec.extend(
        std::fs::canonicalize(program)
            .ok()
            .and_then(|p| node_modules_of(&p)),
    );
    let mut from_args = Vec::new();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    for arg in &key.args {
        // `--root=/srv/data` names a path too.
        let text = arg.split_once('=').map_or(arg.as_str(), |(_, v)| v);
        if text.is_empty() || text.starts_with('-') {
            continue;
        }
        let p = config_path(text, &key.workspace);
        match std::fs::metadata(&p) {
            Ok(m) if m.is_dir() => {
                if p.parent().is_some() && Some(&p) != home.as_ref() {
                    from_args.push(p);
                }
            }
            Ok(_) => {
                from_args.push(install_root(&p));
                from_args.extend(project_root(&p));
                from_args.extend(node_modules_of(&p));
            }
            Err(_) => {}
        }
    }
    // What the arguments name inside the workspace is only readable: a
    // program may have written files there, and nothing in the workspace
    // is executable unless `read_paths` says so.
    let (inside, outside): (Vec<PathBuf>, Vec<PathBuf>) = from_args
        .into_iter()
        .partition(|p| p.starts_with(&key.workspace));
    read_exec.extend(outside);
    read_exec.sort();
    read_exec.dedup();
    // `read_paths` in the program-writable set are readable, never
    // executable: a program could have written what is there.
    let (writable, trusted): (Vec<PathBuf>, Vec<PathBuf>) = key
        .read_paths
        .iter()
        .map(|p| config_path(p, &key.workspace))
        .partition(|p| crate::trusted::in_writable_set(p, &key.workspace));
    read_exec.extend(trusted);
    let mut read_only = inside;
    read_only.extend(writable);
    let mut read_write: Vec<PathBuf> = key
        .write_paths
        .iter()
        .map(|p| config_path(p, &key.workspace))
        .collect();
    match key.ws_access {
        WorkspaceAccess::None => {}
        WorkspaceAccess::Read => read_only.push(key.workspace.clone()),
        WorkspaceAccess::Write => read_write.push(key.workspace.clone()),
    }
    Spec {
        network: key.network,
        fsize: if read_write.is_empty() {
            0
        } else {
            libc::RLIM_INFINITY
        },
        read_exec,
        read_only,
        read_write,
        cpu_seconds: None,
        as_bytes: None,
        data_bytes: Some(
            key.memory_mb
                .unwrap_or(DEFAULT_SERVER_MEMORY_MB)
                .saturating_mul(1024 * 1024),
        ),
        nofile: SERVER_NOFILE,
        max_procs: key.max_procs.unwrap_or(DEFAULT_SERVER_MAX_PROCS),
        hide_control_of: Some(key.workspace.clone()),
    }
}

/// The outermost `node_modules` directory `path` lies in (where Node looks
/// for the packages a package imports), if any.
fn node_modules_of(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .last()
        .map(Path::to_path_buf)
}

/// What a server that failed to start may have been missing, for the
/// warning: the jail's defaults, and the keys that open them.
fn jail_hint(server: &McpServer) -> String {
    if server.transport != "stdio" {
        // No process, no jail: the failure is the connection's.
        return String::new();
    }
    match server.command.as_deref() {
        None => return String::new(),
        // A missing program is not a jail problem.
        Some(c) if missing_program(c).is_some() => return String::new(),
        Some(_) => {}
    }
    let mut closed = Vec::new();
    if !server.network {
        closed.push("no network (`network = true`)");
    }
    if server.workspace != WorkspaceAccess::Write {
        closed.push("no writes to the workspace (`workspace = \"write\"`)");
    }
    closed.push("no home directory, /tmp or /proc unless listed (`read_paths`, `write_paths`)");
    format!(
        " (hint: it runs jailed: {}; see its stderr above)",
        closed.join(", ")
    )
}

/// The refusal when the server's program, or a script among its
/// arguments (a file with a script ending or an execute bit), lies in the
/// program-writable set: a program could rewrite the server's code.
/// Directories and data files named by arguments stay allowed (read-only).
fn untrusted_code(key: &ServerKey, program: &Path) -> Option<String> {
    let ws = &key.workspace;
    if crate::trusted::in_writable_set(program, ws) {
        return Some(crate::trusted::refusal("the server program", program, ws));
    }
    for arg in &key.args {
        if let Some(p) = crate::trusted::script_in_writable_set(arg, ws, |t| config_path(t, ws)) {
            return Some(crate::trusted::refusal("the server script", &p, ws));
        }
    }
    if !key.trust_workspace_code {
        if let Some(why) = crate::launchers::reads_workspace_code(&key.command, &key.args, ws) {
            return Some(crate::launchers::refusal(&why, ws, "[mcp_servers] table"));
        }
    }
    None
}

/// The TLS configuration of remote servers: rustls with the ring provider
/// and the webpki root certificates (the stack `serve` and the inferencer
/// use; no system trust store, no second TLS library).
fn tls_config() -> Result<rustls::ClientConfig, McpSourceError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    Ok(rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| McpSourceError::Runtime(format!("TLS setup: {e}")))?
    .with_root_certificates(roots)
    .with_no_client_auth())
}

/// Connect to a remote (`transport = "http"`) server with rmcp's
/// Streamable HTTP client and complete the MCP handshake (on the runtime).
/// The HTTP client follows no redirect (a redirect could carry the
/// headers elsewhere) and uses no proxy; responses and events are capped
/// at [`MAX_REMOTE_RESPONSE`], error bodies at [`MAX_REMOTE_ERROR_BODY`],
/// and their JSON values counted before rmcp parses them
/// ([`super::mcp_http`]); the caller's timeout bounds the whole exchange.
async fn connect_http(key: ServerKey) -> Result<Conn, McpSourceError> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::StreamableHttpClientTransport;
    let values = expand_headers(&key.name, &key.headers)?;
    let mut headers = HashMap::new();
    for (name, value) in values {
        let hname = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            McpSourceError::Config(format!(
                "config error: mcp_servers.{}.headers.{name}: not a valid header name",
                key.name
            ))
        })?;
        // The error never quotes the value (it may be a token).
        let mut hvalue = http::HeaderValue::from_str(&value).map_err(|_| {
            McpSourceError::Config(format!(
                "config error: mcp_servers.{}.headers.{name}: the value (once expanded) holds characters a header cannot carry",
                key.name
            ))
        })?;
        hvalue.set_sensitive(true);
        headers.insert(hname, hvalue);
    }
    let client = reqwest::Client::builder()
        .tls_backend_preconfigured(tls_config()?)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(DISCOVERY_TIMEOUT)
        .pool_max_idle_per_host(4)
        .build()
        .map_err(|e| McpSourceError::Runtime(format!("HTTP client: {e}")))?;
    let config = StreamableHttpClientTransportConfig::with_uri(key.url.as_str())
        .custom_headers(headers)
        .max_json_response_size(MAX_REMOTE_RESPONSE)
        .max_sse_event_size(MAX_REMOTE_RESPONSE)
        .max_error_response_size(MAX_REMOTE_ERROR_BODY)
        .max_concurrent_requests(8);
    let transport = mcp_lines::Bounded::new(
        StreamableHttpClientTransport::with_client(
            super::mcp_http::Counted::new(client, &key.name),
            config,
        ),
        &key.name,
    );
    let svc = ()
        .serve(transport)
        .await
        .map_err(|e| McpSourceError::Protocol(explain_http(&key, &e.to_string())))?;
    Ok(Arc::new(svc))
}

/// A remote server's failure in words a user can act on: a refused
/// credential (401) or a connection that could not be made, else rmcp's
/// own message.
fn explain_http(key: &ServerKey, text: &str) -> String {
    let text = tidy(text);
    let text = text.as_str();
    // The url (whose port may hold "401") is not part of what is matched.
    let lower = text.replace(&key.url, "URL").to_ascii_lowercase();
    let auth = key
        .headers
        .0
        .keys()
        .find(|h| h.eq_ignore_ascii_case("authorization"));
    if lower.contains("auth required")
        || lower.contains("authorization required")
        || lower.contains("401 unauthorized")
        || lower.contains("http 401")
        || lower.contains("status: 401")
        || lower.contains("unauthorized")
    {
        return match auth {
            Some(h) => format!(
                "the server refused the credentials in headers.{h} (HTTP 401 from {})",
                key.url
            ),
            None => format!(
                "the server asks for credentials (HTTP 401 from {}): set headers.Authorization = \"Bearer ${{TOKEN_VARIABLE}}\"",
                key.url
            ),
        };
    }
    if lower.contains("403 forbidden")
        || lower.contains("http 403")
        || lower.contains("insufficient scope")
    {
        return format!(
            "the server refused access (HTTP 403 from {}): the credentials lack a permission",
            key.url
        );
    }
    if lower.contains("error sending request")
        || lower.contains("dns error")
        || lower.contains("connection refused")
        || lower.contains("tcp connect")
    {
        return format!(
            "cannot connect to {} (DNS, connection or TLS failure): {}",
            key.url,
            clip(text)
        );
    }
    format!("MCP initialize with {} failed: {}", key.url, clip(text))
}

/// rmcp's message without the transport's type name
/// (`Transport [rmcp::transport::worker::WorkerTransport<…>] error: `).
fn tidy(text: &str) -> String {
    let mut out = text.to_string();
    while let Some(i) = out.find("Transport [") {
        let Some(end) = out[i..].find("] error: ") else {
            break;
        };
        out.replace_range(i..i + end + "] error: ".len(), "");
    }
    out.replace("Send message error ", "")
}

/// `text` cut to 500 characters (a remote server chooses part of it).
fn clip(text: &str) -> String {
    const MAX: usize = 500;
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// Start the server (in its jail) or connect to it, and complete the MCP
/// handshake (on the runtime).
async fn connect(key: ServerKey) -> Result<Conn, McpSourceError> {
    if !key.url.is_empty() {
        return connect_http(key).await;
    }
    let program = resolve_program(&key.command);
    if let Some(e) = untrusted_code(&key, &program) {
        return Err(McpSourceError::Config(e));
    }
    let jail = Jail::prepare(&jail_spec(&key, &program))
        .map_err(|e| McpSourceError::Config(format!("cannot jail the server: {e}")))?;
    // No code or configuration from the workspace, the server's cwd.
    let guard = crate::trusted::cwd_guard(&key.command, &program, &key.args);
    if let Some(note) = crate::trusted::workspace_packages_ignored(&guard, &key.workspace) {
        tracing::warn!(server = %key.name, "{note}");
    }
    use std::os::unix::process::CommandExt as _;
    let mut cmd = std::process::Command::new(&program);
    cmd.args(&guard.args_before)
        .args(&key.args)
        .env_clear()
        .current_dir(&key.workspace)
        .process_group(0);
    for var in INHERITED_ENV {
        if let Some(v) = std::env::var_os(var) {
            cmd.env(var, v);
        }
    }
    for (k, v) in &guard.env {
        cmd.env(k, v);
    }
    for (k, v) in &key.env {
        cmd.env(k, v);
    }
    // The jail's outer process dies with the runtime thread that starts it
    // (which lives as long as this process); the server inside dies with
    // that process.
    jail.attach_dying_with_spawner(&mut cmd);
    // Its stdout is read through `BoundedLines`: no line of more values
    // than a reply can carry reaches rmcp's parser.
    let transport = ServerProcess::spawn(tokio::process::Command::from(cmd), &key.name)
        .map_err(|e| McpSourceError::Spawn(crate::childjail::JailError::explain_spawn(e)))?;
    let svc = ()
        .serve(transport)
        .await
        .map_err(|e| McpSourceError::Protocol(format!("MCP initialize failed: {e}")))?;
    Ok(Arc::new(svc))
}

/// The live connection for `key`, starting the server when there is none
/// or the previous one has closed.
fn connection(st: &McpServers, key: &ServerKey, timeout: Duration) -> Result<Conn, McpSourceError> {
    if let Ok(map) = st.conns.lock() {
        if let Some(c) = map.get(key) {
            if !c.is_closed() && !c.is_transport_closed() {
                return Ok(Arc::clone(c));
            }
        }
    }
    let _guard = st.start_lock.lock().unwrap_or_else(|p| p.into_inner());
    // Another thread may have started it while this one waited.
    if let Ok(map) = st.conns.lock() {
        if let Some(c) = map.get(key) {
            if !c.is_closed() && !c.is_transport_closed() {
                return Ok(Arc::clone(c));
            }
        }
    }
    drop_connection(st, key);
    let c = run_on(st, connect(key.clone()), timeout, None)??;
    if let Ok(mut map) = st.conns.lock() {
        map.insert(key.clone(), Arc::clone(&c));
    }
    Ok(c)
}

/// Forget (and so stop) the server process for `key`.
fn drop_connection(st: &McpServers, key: &ServerKey) {
    let old = st.conns.lock().ok().and_then(|mut m| m.remove(key));
    if let (Some(c), Ok(rt)) = (old, runtime(st)) {
        // Dropped on the runtime: the transport's cleanup spawns a kill task.
        rt.spawn(async move { drop(c) });
    }
}

/// The identity of `key`'s server for the workspace's tool-list cache
/// ([`crate::providers::mcp_cache`]): its table without environment values, the
/// workspace, and the files it runs.
fn cache_identity(key: &ServerKey, program: &Path) -> String {
    if !key.url.is_empty() {
        return http_identity(key);
    }
    let env_names: Vec<&str> = key.env.iter().map(|(k, _)| k.as_str()).collect();
    let parts = format!(
        "v1\ncommand {:?}\nargs {:?}\nenv {:?}\nworkspace {:?}\nnetwork {}\naccess {:?}\nread {:?}\nwrite {:?}\nmemory {:?}\nprocs {:?}\n",
        key.command,
        key.args,
        env_names,
        key.workspace,
        key.network,
        key.ws_access,
        key.read_paths,
        key.write_paths,
        key.memory_mb,
        key.max_procs,
    );
    let mut files = vec![program.to_path_buf()];
    files.extend(std::fs::canonicalize(program).ok());
    for arg in &key.args {
        let text = arg.split_once('=').map_or(arg.as_str(), |(_, v)| v);
        if text.is_empty() || text.starts_with('-') {
            continue;
        }
        let p = config_path(text, &key.workspace);
        if p.is_file() {
            files.push(p);
        }
    }
    crate::providers::mcp_cache::identity(&parts, &files)
}

/// The cache identity of a remote server: its url, the workspace, the
/// header names and a SHA-256 over the expanded header values (never the
/// values: a changed token makes a new identity without being stored).
/// An unset variable gives an identity no entry matches.
fn http_identity(key: &ServerKey) -> String {
    let values = match expand_headers(&key.name, &key.headers) {
        Ok(v) => {
            let mut joined = String::new();
            for (h, v) in &v {
                joined.push_str(h);
                joined.push('\0');
                joined.push_str(v);
                joined.push('\0');
            }
            crate::sha256::hex(joined.as_bytes())
        }
        Err(_) => "unresolved".to_string(),
    };
    let parts = format!(
        "v1-http\nurl {:?}\nheaders {:?}\nvalues {values}\nworkspace {:?}\n",
        key.url,
        key.headers.names(),
        key.workspace,
    );
    crate::providers::mcp_cache::identity(&parts, &[])
}

/// Why `command` cannot be started, when it does not exist: a bare name
/// not on `PATH`, or a path naming nothing.
fn missing_program(command: &str) -> Option<String> {
    if command.contains('/') {
        return (!Path::new(command).exists())
            .then(|| format!("the program {command:?} does not exist"));
    }
    find_on_path(command).is_none().then(|| {
        let path = std::env::var("PATH").unwrap_or_default();
        format!("the program {command:?} is not on PATH ({path}); give its full path as `command`")
    })
}

/// The tools one server lists, cached per process (failures too, so a
/// broken server costs one attempt and one warning) and, when it lists
/// them, in the workspace's cache: a later process with the same server
/// identity takes the list from there without starting it.
fn list_tools(st: &McpServers, key: &ServerKey, timeout: Duration) -> Discovered {
    let cached = st.discovered.lock().ok().and_then(|m| m.get(key).cloned());
    if let Some((r, at)) = cached {
        if r.is_ok() || at.elapsed() < RETRY_FAILED_AFTER {
            return r;
        }
    }
    let program = resolve_program(&key.command);
    let identity = cache_identity(key, &program);
    // A remote server whose header variables are unset is not looked up
    // in the cache (its identity is unresolved): the connection reports why.
    let cacheable = key.url.is_empty() || expand_headers(&key.name, &key.headers).is_ok();
    if !cacheable {
        return list_live(st, key, timeout);
    }
    if let Some(tools) = crate::providers::mcp_cache::load(&key.workspace, &key.name, &identity) {
        if let Ok(mut m) = st.discovered.lock() {
            m.insert(key.clone(), (Ok(tools.clone()), Instant::now()));
        }
        return Ok(tools);
    }
    let r = list_live(st, key, timeout);
    if let Ok(tools) = &r {
        if let Err(e) =
            crate::providers::mcp_cache::store(&key.workspace, &key.name, &identity, tools)
        {
            tracing::debug!("mcp server {}: tool list not cached: {e}", key.name);
        }
    }
    r
}

/// Start (or reuse) the server and ask it for its tools, remembering the
/// answer for this process.
fn list_live(st: &McpServers, key: &ServerKey, timeout: Duration) -> Discovered {
    let r = (|| {
        if key.url.is_empty() {
            if let Some(why) = missing_program(&key.command) {
                return Err(McpSourceError::Config(why));
            }
        }
        let c = connection(st, key, timeout)?;
        let peer = c.peer().clone();
        run_on(st, list_bounded(peer), timeout, None)?
            .map_err(|e| McpSourceError::Protocol(format!("tools/list failed: {}", clip(&e))))
    })()
    .map_err(|e| e.to_string());
    if r.is_err() {
        drop_connection(st, key);
    }
    if let Ok(mut m) = st.discovered.lock() {
        m.insert(key.clone(), (r.clone(), Instant::now()));
    }
    r
}

/// Every tool a server lists, page by page, at most [`MAX_TOOLS_PER_SERVER`]
/// tools and [`MAX_LIST_PAGES`] pages (a server that keeps sending a next
/// cursor, or the same one, is cut off there); listings over
/// [`MAX_LIST_BYTES`] in all are an error.
async fn list_bounded(peer: rmcp::service::Peer<RoleClient>) -> Result<Vec<Tool>, String> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    let (mut bytes, mut values) = (0usize, 0usize);
    for _ in 0..MAX_LIST_PAGES {
        let params = cursor
            .take()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = peer.list_tools(params).await.map_err(|e| e.to_string())?;
        for t in &page.tools {
            let (b, v) = serde_json::to_vec(t).map_or((usize::MAX, usize::MAX), |j| {
                (j.len(), mcp_lines::count_values(&j))
            });
            bytes = bytes.saturating_add(b);
            values = values.saturating_add(v);
        }
        if bytes > MAX_LIST_BYTES {
            return Err(format!(
                "the server's tool listings take more than {MAX_LIST_BYTES} bytes (MAX_LIST_BYTES)"
            ));
        }
        if values > MAX_LIST_VALUES {
            return Err(format!(
                "the server's tool listings hold more than {MAX_LIST_VALUES} JSON values (MAX_LIST_VALUES); honest listings hold a few thousand"
            ));
        }
        tools.extend(page.tools);
        if tools.len() >= MAX_TOOLS_PER_SERVER {
            tools.truncate(MAX_TOOLS_PER_SERVER);
            break;
        }
        match page.next_cursor {
            Some(c) if !c.is_empty() => cursor = Some(c),
            _ => break,
        }
    }
    Ok(tools)
}

/// The grade the annotations claim (hints; `[mcp_servers.X.tools.T] grade`
/// overrides them):
/// - `w`: `openWorldHint: true` → 3, else `readOnlyHint: true` → 1, else 2;
/// - `d`: `readOnlyHint: true` → 0, else `destructiveHint: true` → 3,
///   `destructiveHint: false` → 1 when `idempotentHint: true` else 2;
/// - absent hints are conservative: no annotations at all is w2/d2.
pub fn grade_from_annotations(a: Option<&ToolAnnotations>) -> Grade {
    let read_only = a.and_then(|a| a.read_only_hint) == Some(true);
    let open_world = a.and_then(|a| a.open_world_hint) == Some(true);
    let w = if open_world {
        3
    } else if read_only {
        1
    } else {
        2
    };
    let d = if read_only {
        0
    } else {
        match a.and_then(|a| a.destructive_hint) {
            Some(true) => 3,
            Some(false) if a.and_then(|a| a.idempotent_hint) == Some(true) => 1,
            _ => 2,
        }
    };
    Grade { w, d }
}

/// A Python identifier for an MCP tool or parameter name (`read-file` →
/// `read_file`); `None` when nothing usable is left or it is a keyword.
fn py_name(name: &str) -> Option<String> {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.chars().all(|c| c == '_') {
        return None;
    }
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    const KEYWORDS: &[&str] = &[
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
        "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
        "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
        "try", "while", "with", "yield",
    ];
    (!KEYWORDS.contains(&s.as_str())).then_some(s)
}

fn py_type(schema: &Value) -> String {
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => "str",
        Some("integer") => "int",
        Some("number") => "float",
        Some("boolean") => "bool",
        Some("array") => "list",
        Some("object") => "dict",
        _ => "",
    }
    .to_string()
}

/// Arguments from an input schema: the `required` properties in their
/// order, then the rest in the schema's order.
fn args_of(schema: &Map<String, Value>) -> Vec<ArgSpec> {
    let empty = Map::new();
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut names: Vec<&str> = required
        .iter()
        .copied()
        .filter(|r| props.contains_key(*r))
        .collect();
    for k in props.keys() {
        if !names.contains(&k.as_str()) {
            names.push(k);
        }
    }
    names
        .into_iter()
        .map(|n| {
            let p = props.get(n).unwrap_or(&Value::Null);
            ArgSpec {
                name: n.to_string(),
                type_name: py_type(p),
                description: {
                    let d = p
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    match (required.contains(&n), d.is_empty()) {
                        (true, _) => d.to_string(),
                        (false, true) => "optional (None leaves it out)".to_string(),
                        (false, false) => format!("optional (None leaves it out): {d}"),
                    }
                },
            }
        })
        .collect()
}

/// `timeout_seconds` of `[mcp_servers.NAME]` (as parsed with the rest of
/// the config: never re-read from a file a program might have swapped).
fn timeout_of(config: &Config, name: &str) -> Duration {
    all_servers(config)
        .into_iter()
        .find(|(n, _)| *n == name)
        .and_then(|(_, s)| s.timeout_ms)
        .map_or(DEFAULT_CALL_TIMEOUT, |ms| {
            Duration::from_millis(ms).min(Duration::from_secs(MAX_TIMEOUT_SECONDS))
        })
}

/// The [`ToolSpec`] for one listed tool of server `name` (`None` when the
/// tool's name leaves no Python identifier). Public so the conversion of a
/// hostile server's tool listing can be fuzzed without a server.
pub fn spec_of(name: &str, server: &McpServer, tool: &Tool, timeout: Duration) -> Option<ToolSpec> {
    let bare = py_name(&tool.name)?;
    let grade = server
        .tool_grades
        .get(tool.name.as_ref())
        .or_else(|| server.tool_grades.get(&bare))
        .copied()
        .unwrap_or_else(|| grade_from_annotations(tool.annotations.as_ref()));
    let mut pc = Map::new();
    pc.insert("server".into(), Value::String(name.to_string()));
    pc.insert("tool".into(), Value::String(tool.name.to_string()));
    let required: Vec<Value> = tool
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter(|x| x.is_string()).cloned().collect())
        .unwrap_or_default();
    pc.insert("required".into(), Value::Array(required));
    pc.insert(
        "timeout_ms".into(),
        Value::from(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)),
    );
    Some(ToolSpec {
        name: bare,
        provider: "mcp".into(),
        provider_config: pc,
        description: tool.description.as_deref().unwrap_or_default().to_string(),
        args: args_of(&tool.input_schema),
        returns: if tool.output_schema.is_some() {
            "dict".into()
        } else {
            String::new()
        },
        grade_w: grade.w,
        effects_ceiling: grade.d,
        docs: None,
    })
}

/// Whether `name` is in the `required` list that discovery copied from the
/// server tool's input schema into `spec.provider_config`. A parameter that
/// is not may be left out of a call (`None` leaves it out).
pub fn is_required(spec: &ToolSpec, name: &str) -> bool {
    spec.provider_config
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|r| r.iter().any(|x| x.as_str() == Some(name)))
}

/// Start (once per process) every `[mcp_servers]` entry of `config` in
/// `workspace` and return their tools as [`ToolSpec`]s (provider `mcp`,
/// `provider_config = {server, tool, required, timeout_ms}`), servers in name order.
/// A server that cannot be used is left out and reported in the second list
/// (`"mcp server NAME: why"`). Names are not deduplicated here; see
/// [`extend_config`].
fn discover(st: &McpServers, config: &Config, workspace: &Path) -> (Vec<ToolSpec>, Vec<String>) {
    let mut tools = Vec::new();
    let mut warnings = Vec::new();
    for (name, server) in all_servers(config) {
        let timeout = timeout_of(config, name);
        let listed = key_of(name, server, workspace)
            .map_err(|e| e.to_string())
            .and_then(|key| list_tools(st, &key, DISCOVERY_TIMEOUT.min(timeout)));
        match listed {
            Ok(list) => tools.extend(
                list.iter()
                    .take(MAX_TOOLS_PER_SERVER)
                    .filter_map(|t| spec_of(name, server, t, timeout)),
            ),
            Err(e) => warnings.push(format!(
                "mcp server {name}{}: {e}; its tools are unavailable{}",
                origin_of(server),
                jail_hint(server)
            )),
        }
    }
    (tools, warnings)
}

/// ` (from FILE)` for a server read from a host application's config.
fn origin_of(server: &McpServer) -> String {
    server
        .origin
        .as_ref()
        .map(|f| format!(" (from {})", f.display()))
        .unwrap_or_default()
}

/// What `lackpy doctor` reports for one configured server.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ServerReport {
    /// The `[mcp_servers.NAME]` name.
    pub name: String,
    /// Where it is: the url of a remote server, the command of a stdio one.
    pub endpoint: String,
    /// The host application's config file it was read from, if any.
    pub origin: Option<String>,
    /// Its jail in one line (network, workspace, what it may read and write).
    pub jail: String,
    /// How many tools it listed, when it started.
    pub tools: Option<usize>,
    /// Why it could not be used, when it did not.
    pub error: Option<String>,
}

/// Start (or reuse) every server of `config` and report its jail and
/// whether it lists its tools (for `lackpy doctor`).
fn check_servers(st: &McpServers, config: &Config, workspace: &Path) -> Vec<ServerReport> {
    let show = |paths: &[PathBuf]| {
        let v: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        if v.is_empty() {
            "-".to_string()
        } else {
            v.join(" ")
        }
    };
    all_servers(config)
        .into_iter()
        .map(|(name, server)| {
            let timeout = timeout_of(config, name);
            let endpoint = match &server.url {
                Some(u) if server.transport == "http" => u.clone(),
                _ => server.command.clone().unwrap_or_default(),
            };
            let origin = server.origin.as_ref().map(|p| p.display().to_string());
            match key_of(name, server, workspace) {
                Err(e) => ServerReport {
                    name: name.clone(),
                    endpoint,
                    origin,
                    jail: String::new(),
                    tools: None,
                    error: Some(e.to_string()),
                },
                Ok(key) if !key.url.is_empty() => {
                    let listed = list_live(st, &key, DISCOVERY_TIMEOUT.min(timeout));
                    if let Ok(tools) = &listed {
                        let id = http_identity(&key);
                        let _ = crate::providers::mcp_cache::store(&key.workspace, name, &id, tools);
                    }
                    ServerReport {
                        name: name.clone(),
                        endpoint,
                        origin,
                        jail: format!(
                            "none: remote server at {}, reached by the supervisor over the network (headers: {})",
                            key.url,
                            if key.headers.is_empty() { "-".to_string() } else { key.headers.names().join(", ") }
                        ),
                        tools: listed.as_ref().ok().map(Vec::len),
                        error: listed.err(),
                    }
                }
                Ok(key) => {
                    let spec = jail_spec(&key, &resolve_program(&key.command));
                    let jail = format!(
                        "{}; read+exec (beyond the system directories): {}; read-only: {}; read/write: {}",
                        if spec.network { "host network" } else { "no network" },
                        show(&spec.read_exec),
                        show(&spec.read_only),
                        show(&spec.read_write),
                    );
                    // Asked live (never from the cache): doctor checks the server.
                    let listed = list_live(st, &key, DISCOVERY_TIMEOUT.min(timeout));
                    if let Ok(tools) = &listed {
                        let id = cache_identity(&key, &resolve_program(&key.command));
                        let _ = crate::providers::mcp_cache::store(&key.workspace, name, &id, tools);
                    }
                    ServerReport {
                        name: name.clone(),
                        endpoint,
                        origin,
                        jail,
                        tools: listed.as_ref().ok().map(Vec::len),
                        error: listed
                            .err()
                            .map(|e| format!("{e}{}", jail_hint(server))),
                    }
                }
            }
        })
        .collect()
}

/// Add the tools of `config`'s MCP servers to `config.tools` so that the
/// toolbox, profiles and the validator know them. Builtins, `[[tools]]` and
/// `[[virtual_tools]]` keep their names; among servers the first (by server
/// name) wins; a shadowed tool is left out and reported: the returned
/// lines (one per shadowed tool) are also printed as warnings. Warnings go
/// to stderr, once per process each.
pub(crate) fn start(st: &McpServers, config: &mut Config, workspace: &Path) -> Vec<String> {
    if !has_servers(config) {
        return Vec::new();
    }
    let (found, warnings) = discover(st, config, workspace);
    let origins: Vec<(String, String)> = all_servers(config)
        .into_iter()
        .map(|(n, s)| (n.clone(), origin_of(s)))
        .collect();
    let origin = |server: &str| {
        origins
            .iter()
            .find(|(n, _)| n == server)
            .map(|(_, o)| o.clone())
            .unwrap_or_default()
    };
    let warned = &st.warned;
    for w in warnings {
        if let Ok(mut seen) = warned.lock() {
            if seen.contains(&w) {
                continue;
            }
            seen.push(w.clone());
        }
        eprintln!("lackpy: warning: {w}");
    }
    let taken: Vec<(String, String)> = config
        .toolbox()
        .tools
        .into_iter()
        .map(|t| {
            let by = if t.provider == "builtin" {
                "the builtin".to_string()
            } else {
                format!("the config's [[tools]] entry ({})", t.provider)
            };
            (t.name, by)
        })
        .collect();
    let mut added: Vec<(String, String)> = Vec::new();
    let mut clashes = Vec::new();
    for t in found {
        let server = t
            .provider_config
            .get("server")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let by = taken
            .iter()
            .find(|(n, _)| *n == t.name)
            .map(|(_, by)| by.clone())
            .or_else(|| {
                added
                    .iter()
                    .find(|(n, _)| *n == t.name)
                    .map(|(_, s)| format!("the tool of mcp server {s}"))
            });
        if let Some(by) = by {
            clashes.push(format!(
                "mcp server {server}{}: its tool {} is hidden by {by} of the same name, so it is not available",
                origin(&server),
                t.name
            ));
            continue;
        }
        added.push((t.name.clone(), server));
        config.tools.push(t);
    }
    for c in &clashes {
        if let Ok(mut seen) = warned.lock() {
            if seen.contains(c) {
                continue;
            }
            seen.push(c.clone());
        }
        eprintln!("lackpy: warning: {c}");
    }
    clashes
}

impl McpServers {
    /// Run one authorized call of an `mcp` tool (positional arguments in
    /// the spec's order, mapped to the input schema's property names;
    /// fewer arguments than declared leave the rest out). The tool's server
    /// must have been started by this value for this workspace
    /// ([`McpServers::start`]); its command line, arguments and environment
    /// come from the discovery cache (so they never appear in listings).
    ///
    /// # Errors
    /// `Timeout` when the server does not answer in time; `ToolFailed` when
    /// it cannot be started, dies, answers an error or `isError: true`, or
    /// returns something that is not plain data.
    pub fn call(
        &self,
        m: &McpTool,
        spec: &ToolSpec,
        args: &[Data],
        ws: &Workspace,
        run: &RunContext,
    ) -> Result<Data, ToolFailure> {
        let st = self;
        let name = &spec.name;
        let server = m.server.as_str();
        let tool = m.tool.clone();
        let timeout = spec
            .provider_config
            .get("timeout_ms")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_CALL_TIMEOUT, Duration::from_millis);
        let timeout = run.clamp_timeout(timeout);
        let workspace = workspace_path(ws)?;
        let key = server_key(st, server, &workspace).ok_or_else(|| {
            ToolFailure::new(
                "ToolFailed",
                format!("{name}(): MCP server {server:?} was not started for this workspace"),
            )
        })?;
        let mut arguments = Map::new();
        for (i, a) in args.iter().enumerate() {
            let Some(arg) = spec.args.get(i) else {
                return Err(ToolFailure::new(
                    "BadArgument",
                    format!("{name}() takes {} arguments", spec.args.len()),
                ));
            };
            // `None` for an optional parameter leaves it out (so a program can
            // skip one positionally: `read_text_file(p, None, 2)`).
            if *a == Data::None && !is_required(spec, &arg.name) {
                continue;
            }
            arguments.insert(arg.name.clone(), to_json(a));
        }
        let conn = connection(st, &key, timeout).map_err(|e| {
            ToolFailure::new(
                "ToolFailed",
                format!("{name}(): MCP server {server:?}: {e}"),
            )
        })?;
        let peer = conn.peer().clone();
        drop(conn);
        let params = CallToolRequestParams::new(tool).with_arguments(arguments);
        let cancel = run.cancel.as_deref();
        let call = async move { peer.call_tool(params).await };
        let result = match run_on(st, call, timeout, cancel) {
            Err(McpSourceError::Cancelled) => {
                return Err(ToolFailure::new(
                    "Timeout",
                    format!("the run was cancelled during {name}() (MCP server {server:?})"),
                ));
            }
            Err(McpSourceError::Timeout(_)) => {
                // A hung server is killed; the next call starts a fresh one.
                drop_connection(st, &key);
                return Err(ToolFailure::new(
                    "Timeout",
                    format!("{name}() did not answer within {timeout:?} (MCP server {server:?})"),
                ));
            }
            Err(e) => return Err(ToolFailure::new("ToolFailed", format!("{name}(): {e}"))),
            Ok(Err(e)) => {
                let closed = matches!(
                    e,
                    rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
                ) || st
                    .conns
                    .lock()
                    .ok()
                    .and_then(|m| {
                        m.get(&key)
                            .map(|c| c.is_closed() || c.is_transport_closed())
                    })
                    .unwrap_or(true);
                if closed {
                    drop_connection(st, &key);
                    return Err(ToolFailure::new(
                        "ToolFailed",
                        format!("{name}(): MCP server {server:?} died during the call"),
                    ));
                }
                if let rmcp::ServiceError::McpError(d) = &e {
                    if d.message.starts_with(super::mcp_lines::NOT_READ) {
                        return Err(ToolFailure::new(
                            "TooLarge",
                            format!("{name}(): {}", d.message),
                        ));
                    }
                }
                return Err(ToolFailure::new("ToolFailed", format!("{name}(): {e}")));
            }
            Ok(Ok(r)) => r,
        };
        result_to_data(name, &result)
    }
}

/// What a server's `tools/call` result becomes for the program: the
/// structured content as plain data when there is one, else the text
/// blocks joined by newlines (`None` for no content at all). Pure, so the
/// conversion of hostile server output can be fuzzed without a server.
///
/// # Errors
/// `ToolFailed` for `isError: true` (with the server's text) and for
/// structured content that is not plain data (too deep).
pub fn result_to_data(name: &str, result: &CallToolResult) -> Result<Data, ToolFailure> {
    let text = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n");
    if result.is_error == Some(true) {
        let msg = if text.is_empty() {
            "the tool reported an error".to_string()
        } else {
            text
        };
        return Err(ToolFailure::new("ToolFailed", format!("{name}(): {msg}")));
    }
    match &result.structured_content {
        Some(v) => from_plain(v, 0)
            .map_err(|e| ToolFailure::new("ToolFailed", format!("{name}(): unusable result: {e}"))),
        None if result.content.is_empty() => Ok(Data::None),
        None => Ok(Data::Str(text)),
    }
}

/// The key under which `server` was discovered for `workspace`.
fn server_key(st: &McpServers, server: &str, workspace: &Path) -> Option<ServerKey> {
    let m = st.discovered.lock().ok()?;
    let mut keys: Vec<&ServerKey> = m
        .keys()
        .filter(|k| k.name == server && k.workspace == workspace)
        .collect();
    keys.sort_by(|a, b| (&a.command, &a.args).cmp(&(&b.command, &b.args)));
    keys.first().map(|k| (*k).clone())
}

/// Forget every cached discovery and stop every server (for tests and for
/// long-running front ends that reload configuration).
fn reset(st: &McpServers) {
    if let Ok(mut m) = st.discovered.lock() {
        m.clear();
    }
    let keys: Vec<ServerKey> = st
        .conns
        .lock()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    for k in keys {
        drop_connection(st, &k);
    }
}

impl McpServers {
    /// Start every `[mcp_servers]` entry of `config` in `workspace` (once
    /// per entry and workspace; a failed one is retried after a minute)
    /// and add their tools to `config.tools`, so that the toolbox, profiles
    /// and the validator know them. Builtins, `[[tools]]` and
    /// `[[virtual_tools]]` keep their names; among servers the first (by
    /// server name) wins; a shadowed tool is left out and reported: the
    /// returned lines (one per shadowed tool) are also printed as warnings,
    /// once each.
    pub fn start(&self, config: &mut Config, workspace: &Path) -> Vec<String> {
        start(self, config, workspace)
    }

    /// Start (or reuse) every server of `config` and return their tools as
    /// [`ToolSpec`]s (provider `mcp`, `provider_config = {server, tool,
    /// required, timeout_ms}`), servers in name order. A server that cannot
    /// be used is left out and reported in the second list (`"mcp server
    /// NAME: why"`). Names are not deduplicated here; see
    /// [`McpServers::start`].
    pub fn discover(&self, config: &Config, workspace: &Path) -> (Vec<ToolSpec>, Vec<String>) {
        discover(self, config, workspace)
    }

    /// Start (or reuse) every server of `config` and report its jail and
    /// whether it lists its tools (for `lackpy doctor`).
    pub fn check(&self, config: &Config, workspace: &Path) -> Vec<ServerReport> {
        check_servers(self, config, workspace)
    }

    /// Forget every discovery and stop every server (for tests and for
    /// long-running front ends that reload configuration).
    pub fn reset(&self) {
        reset(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ann(v: Value) -> ToolAnnotations {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn grades_from_annotations() {
        let g = |a: Option<ToolAnnotations>| {
            let g = grade_from_annotations(a.as_ref());
            (g.w, g.d)
        };
        assert_eq!(g(None), (2, 2));
        assert_eq!(g(Some(ann(json!({})))), (2, 2));
        assert_eq!(
            g(Some(ann(
                json!({"readOnlyHint": true, "openWorldHint": false})
            ))),
            (1, 0)
        );
        assert_eq!(
            g(Some(ann(
                json!({"readOnlyHint": true, "openWorldHint": true})
            ))),
            (3, 0)
        );
        assert_eq!(g(Some(ann(json!({"destructiveHint": true})))), (2, 3));
        assert_eq!(
            g(Some(ann(
                json!({"destructiveHint": false, "idempotentHint": true})
            ))),
            (2, 1)
        );
        assert_eq!(g(Some(ann(json!({"destructiveHint": false})))), (2, 2));
    }

    #[test]
    fn npm_installs_read_their_node_modules_and_missing_programs_say_so() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let dist = root.join("proj/node_modules/@scope/srv/dist");
        std::fs::create_dir_all(&dist).unwrap();
        std::fs::create_dir_all(root.join("proj/node_modules/.bin")).unwrap();
        std::fs::write(dist.join("index.js"), "#!/usr/bin/env node\n").unwrap();
        let bin = root.join("proj/node_modules/.bin/srv");
        std::os::unix::fs::symlink("../@scope/srv/dist/index.js", &bin).unwrap();
        let nm = root.join("proj/node_modules");
        assert_eq!(node_modules_of(&bin), Some(nm.clone()));
        // Nested installs: the outermost node_modules holds them all.
        assert_eq!(
            node_modules_of(&nm.join("a/node_modules/b/x.js")),
            Some(nm.clone())
        );
        assert_eq!(node_modules_of(&root.join("proj/x.js")), None);
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let key = key_of(
            "s",
            &McpServer {
                transport: "stdio".into(),
                command: Some(bin.display().to_string()),
                ..McpServer::default()
            },
            &ws,
        )
        .unwrap();
        let spec = jail_spec(&key, &bin);
        assert!(spec.read_exec.contains(&nm), "{:?}", spec.read_exec);
        assert!(missing_program("no-such-program-for-lackpy-tests")
            .is_some_and(|m| m.contains("is not on PATH")));
        assert!(missing_program("/no/such/dir/prog").is_some_and(|m| m.contains("does not exist")));
        assert!(missing_program("sh").is_none());
        assert!(missing_program(&bin.display().to_string()).is_none());
    }

    #[test]
    fn python_names() {
        assert_eq!(py_name("read-file").as_deref(), Some("read_file"));
        assert_eq!(py_name("2fa").as_deref(), Some("_2fa"));
        assert_eq!(py_name("a.b").as_deref(), Some("a_b"));
        assert_eq!(py_name("class"), None);
        assert_eq!(py_name("--"), None);
        assert_eq!(py_name(""), None);
    }

    #[test]
    fn args_required_first() {
        let schema = json!({
            "type": "object",
            "properties": {"z": {"type": "string"}, "a": {"type": "integer", "description": "n"}, "m": {}},
            "required": ["m", "a", "ghost"]
        });
        let args = args_of(schema.as_object().unwrap());
        let names: Vec<&str> = args.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["m", "a", "z"]);
        assert_eq!(args[1].type_name, "int");
        assert_eq!(args[1].description, "n");
        assert_eq!(args[2].description, "optional (None leaves it out)");
        assert_eq!(args[0].type_name, "");
        assert!(args_of(&Map::new()).is_empty());
        // A hostile schema (properties not an object) yields no arguments.
        let bad = json!({"properties": [1, 2], "required": "x"});
        assert!(args_of(bad.as_object().unwrap()).is_empty());
    }

    #[test]
    fn timeout_from_config() {
        let text = "[mcp_servers.a]\ntimeout_seconds = 3\n[mcp_servers.b]\ntimeout_seconds = 0.5\n\
             [mcp_servers.d]\ntimeout_seconds = 1e12\n[mcp_servers.e]\ncommand = \"x\"\n";
        let cfg = Config::parse(text, Path::new("config.toml")).unwrap();
        assert_eq!(timeout_of(&cfg, "a"), Duration::from_secs(3));
        assert_eq!(timeout_of(&cfg, "b"), Duration::from_millis(500));
        assert_eq!(
            timeout_of(&cfg, "d"),
            Duration::from_secs(MAX_TIMEOUT_SECONDS)
        );
        assert_eq!(timeout_of(&cfg, "e"), DEFAULT_CALL_TIMEOUT);
        assert_eq!(timeout_of(&cfg, "none"), DEFAULT_CALL_TIMEOUT);
        // A non-positive timeout is a config error naming the key.
        let e = Config::parse(
            "[mcp_servers.c]\ntimeout_seconds = -1\n",
            Path::new("config.toml"),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("mcp_servers.c.timeout_seconds"),
            "{e}"
        );
    }

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mcp_server.py")
    }

    fn have_python() -> bool {
        std::process::Command::new("python3")
            .args(["-c", "pass"])
            .output()
            .is_ok_and(|o| o.status.success())
    }

    fn server(extra: &[&str]) -> McpServer {
        let mut args = vec![fixture().display().to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        McpServer {
            transport: "stdio".into(),
            command: Some("python3".into()),
            args,
            ..McpServer::default()
        }
    }

    /// A server started by a launcher that reads its working directory
    /// (the workspace) is refused before anything starts; the operator's
    /// `trust_workspace_code = true` lets it start (here it then fails as
    /// the non-server it is).
    #[test]
    fn a_launcher_reading_the_workspace_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let mut cfg = Config::default();
        let make = McpServer {
            transport: "stdio".into(),
            command: Some("sh".into()),
            args: vec!["-c".into(), "exec make serve".into()],
            ..McpServer::default()
        };
        cfg.mcp_servers.insert("m".into(), make.clone());
        let (tools, warnings) = McpServers::default().discover(&cfg, d.path());
        assert!(tools.is_empty());
        assert!(
            warnings.len() == 1
                && warnings[0].contains("Makefile")
                && warnings[0].contains("trust_workspace_code"),
            "{warnings:?}"
        );
        cfg.mcp_servers.insert(
            "m".into(),
            McpServer {
                trust_workspace_code: true,
                timeout_ms: Some(3000),
                ..make
            },
        );
        let (_, warnings) = McpServers::default().discover(&cfg, d.path());
        assert!(
            warnings.len() == 1 && !warnings[0].contains("trust_workspace_code"),
            "{warnings:?}"
        );
    }

    #[test]
    fn unusable_tables_are_reported() {
        let d = tempfile::tempdir().unwrap();
        let mut cfg = Config::default();
        cfg.mcp_servers.insert(
            "web".into(),
            McpServer {
                transport: "http".into(),
                url: Some("http://127.0.0.1:1/".into()),
                ..McpServer::default()
            },
        );
        cfg.mcp_servers.insert(
            "nocmd".into(),
            McpServer {
                transport: "stdio".into(),
                ..McpServer::default()
            },
        );
        let (tools, warnings) = McpServers::default().discover(&cfg, d.path());
        assert!(tools.is_empty());
        assert_eq!(warnings.len(), 2, "{warnings:?}");
    }

    #[test]
    fn dead_server_is_restarted_for_the_next_call() {
        if !have_python() {
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let ws_path = d.path().canonicalize().unwrap();
        let mut cfg = Config::default();
        cfg.mcp_servers.insert("unit".into(), server(&[]));
        // Shadowing: a [[tools]] entry named echo wins the bare name.
        cfg.tools.push(ToolSpec {
            name: "echo".into(),
            provider: "command".into(),
            ..ToolSpec::default()
        });
        let st = McpServers::default();
        st.start(&mut cfg, &ws_path);
        let call = |spec: &ToolSpec, args: &[Data], ws: &Workspace| {
            let Ok(lackpy_policy::config::Provider::Mcp(m)) =
                lackpy_policy::config::Provider::of(spec)
            else {
                panic!("not an mcp tool");
            };
            st.call(&m, spec, args, ws, &RunContext::default())
        };
        let tb = cfg.toolbox();
        assert_eq!(tb.get("echo").map(|t| t.provider.as_str()), Some("command"));
        let crash = tb.get("crash").cloned().unwrap();
        let add = tb.get("add").cloned().unwrap();
        assert_eq!(add.provider, "mcp");
        let ws = Workspace::open(&ws_path).unwrap();
        let r = call(&add, &[Data::Int(2), Data::Int(40)], &ws).unwrap();
        assert_eq!(
            r,
            Data::Dict(vec![(Data::Str("sum".into()), Data::Int(42))])
        );
        let e = call(&crash, &[], &ws).unwrap_err();
        assert_eq!(e.type_name, "ToolFailed", "{e:?}");
        // The server died; the next call starts it again.
        let r = call(&add, &[Data::Int(1), Data::Int(1)], &ws).unwrap();
        assert_eq!(r, Data::Dict(vec![(Data::Str("sum".into()), Data::Int(2))]));
        // None for an optional parameter leaves it out.
        let plain = tb.get("plain").cloned().unwrap();
        let r = call(&plain, &[Data::None], &ws).unwrap();
        assert_eq!(r, Data::Str("plain:<absent>".into()));
        let r = call(&plain, &[Data::Str("v".into())], &ws).unwrap();
        assert_eq!(r, Data::Str("plain:v".into()));
        let r = call(&add, &[Data::Int(1), Data::None], &ws);
        assert!(r.is_err(), "a required None is sent as null: {r:?}");
        // Too many arguments never reach the server.
        let e = call(&add, &[Data::Int(1), Data::Int(1), Data::Int(1)], &ws).unwrap_err();
        assert_eq!(e.type_name, "BadArgument");
    }
}
