//! `[serve]` configuration: who may connect, with which workspace and
//! profiles, and under which quotas.
//!
//! ```toml
//! [serve]
//! pool_size = 4          # warm executor workers per workspace
//! max_in_flight = 8      # runs executing at once, all clients together
//! drain_seconds = 10     # SIGTERM: how long in-flight runs may finish
//! max_connections = 256  # connections open at once, all clients together
//! idle_timeout_seconds = 300  # a connection with no request and no run for this long is closed
//! max_sessions = 1024    # notebook sessions kept, all clients together
//! max_session_bytes = 268435456  # bytes those sessions keep, all clients together (256 MiB)
//!
//! [[serve.clients]]
//! uid = 1000             # and/or gid = 1000; a rule with neither matches nobody
//! workspace = "/srv/ws/alice"
//! profiles = ["readonly"]   # allowed profiles (absent: any; ad-hoc tool lists only when absent)
//! default_profile = "readonly"
//! max_concurrent = 2     # runs in flight for this client
//! runs_per_minute = 600
//! max_tool_calls = 100000  # tool calls per connection
//! max_connections = 32   # connections open at once for this client (HTTP: requests in progress)
//! max_sessions = 64      # notebook sessions this client keeps, all its connections together
//! max_session_bytes = 67108864  # bytes they keep (64 MiB)
//!
//! [[serve.clients]]      # an HTTP client (`lackpy serve --listen`)
//! token_sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
//! workspace = "/srv/ws/ci"   # hex SHA-256 of its bearer token; never the token itself
//!
//! [serve.http]           # only read with --listen
//! allowed_hosts = ["localhost", "127.0.0.1", "::1"]  # Host header values (DNS-rebinding guard); ["*"]: any
//! allowed_origins = []   # browser Origins allowed; a request with any other Origin is refused
//! max_body_bytes = 1048576    # largest request body
//! request_timeout_seconds = 10  # headers and body must arrive within this (slowloris)
//! max_connections = 512  # TCP connections open at once
//! session_mode = true    # MCP sessions (Mcp-Session-Id) for protocol < 2026-07-28; false: stateless only
//! tls_cert = "/etc/lackpy/tls.crt"  # PEM; with tls_key: HTTPS (else plain HTTP, behind a proxy)
//! tls_key = "/etc/lackpy/tls.key"
//! ```
//!
//! Without any `[[serve.clients]]`, exactly one client is allowed: the uid
//! the server runs as, on the `--workspace` directory.
//!
//! A client's caps are clamped to the server-wide ones; the per-client
//! defaults are well below the server-wide defaults, so that one client at
//! its caps leaves room for the others.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The whole `[serve]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeConfig {
    /// Warm workers per workspace.
    pub pool_size: usize,
    /// Runs in flight at once, all clients together (the bounded queue).
    pub max_in_flight: usize,
    /// Seconds in-flight runs get to finish on SIGTERM.
    pub drain_seconds: u64,
    /// Connections open at once, all clients together.
    pub max_connections: usize,
    /// Seconds a connection may stay without a request or a run in flight
    /// before it is closed.
    pub idle_timeout_seconds: u64,
    /// Notebook sessions kept at once, all clients together.
    pub max_sessions: usize,
    /// Approximate bytes of variables all sessions keep together.
    pub max_session_bytes: usize,
    /// Who may connect.
    pub clients: Vec<ClientRule>,
    /// The HTTP listener's settings (`[serve.http]`).
    pub http: HttpConfig,
}

/// `[serve.http]`: the Streamable HTTP listener's guards.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// `Host` values accepted (host or host:port); empty after parsing
    /// `["*"]` means any (only behind a proxy that checks Host itself).
    #[serde(default = "default_allowed_hosts")]
    pub allowed_hosts: Vec<String>,
    /// Browser `Origin`s accepted (`scheme://host[:port|:*]`); a request
    /// carrying any other `Origin` is refused. Requests without `Origin`
    /// (non-browser clients) pass.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// Largest request body in bytes.
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: usize,
    /// Seconds a request's headers, and then its body, may take to arrive.
    #[serde(default = "default_request_timeout")]
    pub request_timeout_seconds: u64,
    /// TCP connections open at once.
    #[serde(default = "default_http_max_connections")]
    pub max_connections: usize,
    /// MCP sessions (`Mcp-Session-Id`) for clients speaking protocols
    /// before 2026-07-28; `false` serves every request statelessly.
    #[serde(default = "default_true")]
    pub session_mode: bool,
    /// PEM certificate chain for HTTPS.
    #[serde(default)]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for HTTPS.
    #[serde(default)]
    pub tls_key: Option<PathBuf>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            allowed_hosts: default_allowed_hosts(),
            allowed_origins: Vec::new(),
            max_body_bytes: default_max_body_bytes(),
            request_timeout_seconds: default_request_timeout(),
            max_connections: default_http_max_connections(),
            session_mode: true,
            tls_cert: None,
            tls_key: None,
        }
    }
}

fn default_allowed_hosts() -> Vec<String> {
    vec!["localhost".into(), "127.0.0.1".into(), "::1".into()]
}
/// Why 1 MiB: a program is at most a few KiB; the JSON-RPC envelope and a
/// notebook's inputs fit with room to spare.
fn default_max_body_bytes() -> usize {
    MIB
}
/// Why 10 s: a client on any working network sends a request in well
/// under a second; a slowloris peer holds a connection at most this long.
fn default_request_timeout() -> u64 {
    10
}
/// Why 512: twice the MCP connection cap (keep-alive and SSE GET streams
/// hold their own TCP connections), well under the open-file limit.
fn default_http_max_connections() -> usize {
    512
}
fn default_true() -> bool {
    true
}

/// One client rule, matched by peer credentials.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientRule {
    /// Peer uid this rule matches.
    #[serde(default)]
    pub uid: Option<u32>,
    /// Peer gid this rule matches.
    #[serde(default)]
    pub gid: Option<u32>,
    /// Hex SHA-256 of the bearer token an HTTP client presents (the token
    /// itself is never in the config).
    #[serde(default)]
    pub token_sha256: Option<String>,
    /// Workspace the client's runs act in.
    pub workspace: PathBuf,
    /// Profiles the client may name (`None`: any, and ad-hoc tool lists).
    #[serde(default)]
    pub profiles: Option<Vec<String>>,
    /// Profile used when a call names none.
    #[serde(default)]
    pub default_profile: Option<String>,
    /// Runs in flight at once for this client.
    #[serde(default = "default_max_concurrent")]
    pub max_concurrent: usize,
    /// Runs started per minute.
    #[serde(default = "default_runs_per_minute")]
    pub runs_per_minute: u32,
    /// Tool calls per connection, all runs together.
    #[serde(default = "default_max_tool_calls")]
    pub max_tool_calls: u64,
    /// Connections open at once for this client.
    #[serde(default = "default_client_max_connections")]
    pub max_connections: usize,
    /// Notebook sessions this client keeps, all its connections together.
    #[serde(default = "default_client_max_sessions")]
    pub max_sessions: usize,
    /// Approximate bytes of variables this client's sessions keep together.
    #[serde(default = "default_client_max_session_bytes")]
    pub max_session_bytes: usize,
}

fn default_max_concurrent() -> usize {
    4
}
fn default_runs_per_minute() -> u32 {
    60_000
}
fn default_max_tool_calls() -> u64 {
    10_000_000
}
/// Why 32: an MCP client needs one connection, a busy agent host a few; 32
/// is an eighth of the server-wide default, so one client at its cap leaves
/// room for others.
fn default_client_max_connections() -> usize {
    32
}
fn default_client_max_sessions() -> usize {
    64
}
/// Why 64 MiB: eight sessions at the default per-session cap (8 MiB, the
/// default result bound), a quarter of the server-wide default.
fn default_client_max_session_bytes() -> usize {
    64 * MIB
}

const MIB: usize = 1024 * 1024;

/// Server-wide defaults. Why 256 connections: well below the usual 1024
/// open-file limit (each connection is one descriptor; workers, pidfds and
/// trace files need the rest), and far more than local clients need.
const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// Why 5 minutes: long enough for a model to think between calls; an idle
/// connection holds a descriptor and its sessions.
const DEFAULT_IDLE_TIMEOUT: u64 = 300;
const DEFAULT_MAX_SESSIONS: usize = 1024;
/// Why 256 MiB: what one server may spend on notebook variables in all.
const DEFAULT_MAX_SESSION_BYTES: usize = 256 * MIB;

/// Largest `max_connections` a config may ask for (descriptors).
pub const MAX_CONNECTIONS: usize = 65_536;
/// Largest `idle_timeout_seconds` (a day).
const MAX_IDLE_TIMEOUT: u64 = 86_400;
/// Largest `max_sessions`.
const MAX_SESSIONS: usize = 1_000_000;

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    serve: Option<Raw>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default)]
    pool_size: Option<usize>,
    #[serde(default)]
    max_in_flight: Option<usize>,
    #[serde(default)]
    drain_seconds: Option<u64>,
    #[serde(default)]
    max_connections: Option<usize>,
    #[serde(default)]
    idle_timeout_seconds: Option<u64>,
    #[serde(default)]
    max_sessions: Option<usize>,
    #[serde(default)]
    max_session_bytes: Option<usize>,
    #[serde(default)]
    clients: Vec<ClientRule>,
    #[serde(default)]
    http: Option<HttpConfig>,
}

/// Largest pool a config may ask for: each worker is a process.
const MAX_POOL: usize = 64;

impl ServeConfig {
    /// Parse `[serve]` from a config file's text; other tables are ignored
    /// here (the workspace config loader reads them).
    ///
    /// # Errors
    /// A message naming the file and what is wrong.
    pub fn parse(
        text: &str,
        file: &Path,
        fallback_ws: &Path,
        own_uid: u32,
    ) -> Result<Self, String> {
        use lackpy_policy::config::{toml_items, MAX_CONFIG_ITEMS};
        if toml_items(text) > MAX_CONFIG_ITEMS {
            return Err(format!(
                "{}: the file holds more than {MAX_CONFIG_ITEMS} TOML items (MAX_CONFIG_ITEMS); it was not parsed",
                file.display()
            ));
        }
        let parsed: File = toml::from_str(text).map_err(|e| format!("{}: {e}", file.display()))?;
        let raw = parsed.serve.unwrap_or(Raw {
            pool_size: None,
            max_in_flight: None,
            drain_seconds: None,
            max_connections: None,
            idle_timeout_seconds: None,
            max_sessions: None,
            max_session_bytes: None,
            clients: Vec::new(),
            http: None,
        });
        let f = file.display();
        let mut cfg = ServeConfig::default_for(fallback_ws, own_uid);
        if let Some(p) = raw.pool_size {
            if p > MAX_POOL {
                return Err(format!(
                    "{}: serve.pool_size {p} is over the maximum {MAX_POOL}",
                    file.display()
                ));
            }
            cfg.pool_size = p;
        }
        if let Some(m) = raw.max_in_flight {
            if m == 0 {
                return Err(format!(
                    "{}: serve.max_in_flight must be at least 1",
                    file.display()
                ));
            }
            cfg.max_in_flight = m;
        }
        if let Some(d) = raw.drain_seconds {
            cfg.drain_seconds = d.min(3600);
        }
        if let Some(m) = raw.max_connections {
            cfg.max_connections = in_range(m, 1, MAX_CONNECTIONS, &f, "serve.max_connections")?;
        }
        if let Some(t) = raw.idle_timeout_seconds {
            cfg.idle_timeout_seconds =
                in_range(t, 1, MAX_IDLE_TIMEOUT, &f, "serve.idle_timeout_seconds")?;
        }
        if let Some(m) = raw.max_sessions {
            cfg.max_sessions = in_range(m, 1, MAX_SESSIONS, &f, "serve.max_sessions")?;
        }
        if let Some(m) = raw.max_session_bytes {
            cfg.max_session_bytes = in_range(m, 1, usize::MAX, &f, "serve.max_session_bytes")?;
        }
        if let Some(h) = raw.http {
            cfg.http = check_http(h, &f)?;
        }
        let mut clients = raw.clients;
        for (i, c) in clients.iter_mut().enumerate() {
            let key = |k: &str| format!("serve.clients[{i}].{k}");
            // A client's caps never exceed the server's.
            c.max_connections = in_range(
                c.max_connections,
                1,
                MAX_CONNECTIONS,
                &f,
                &key("max_connections"),
            )?
            .min(cfg.max_connections);
            c.max_sessions = in_range(c.max_sessions, 1, MAX_SESSIONS, &f, &key("max_sessions"))?
                .min(cfg.max_sessions);
            c.max_session_bytes = in_range(
                c.max_session_bytes,
                1,
                usize::MAX,
                &f,
                &key("max_session_bytes"),
            )?
            .min(cfg.max_session_bytes);
        }
        if clients.is_empty() {
            for c in &mut cfg.clients {
                c.max_connections = c.max_connections.min(cfg.max_connections);
                c.max_sessions = c.max_sessions.min(cfg.max_sessions);
                c.max_session_bytes = c.max_session_bytes.min(cfg.max_session_bytes);
            }
        }
        if !clients.is_empty() {
            for (i, c) in clients.iter().enumerate() {
                if c.uid.is_none() && c.gid.is_none() && c.token_sha256.is_none() {
                    return Err(format!(
                        "{}: serve.clients[{i}] needs uid, gid or token_sha256 (a rule matching nobody is a mistake)",
                        file.display()
                    ));
                }
                if let Some(t) = &c.token_sha256 {
                    if t.len() != 64 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
                        return Err(format!(
                            "{}: serve.clients[{i}].token_sha256 must be 64 hex digits (the SHA-256 of the token: printf %s \"$TOKEN\" | sha256sum), never the token itself",
                            file.display()
                        ));
                    }
                    let dup = clients[..i].iter().any(|o| {
                        o.token_sha256
                            .as_deref()
                            .is_some_and(|x| x.eq_ignore_ascii_case(t))
                    });
                    if dup {
                        return Err(format!(
                            "{}: serve.clients[{i}].token_sha256 is the same as an earlier rule's; one token, one client",
                            file.display()
                        ));
                    }
                }
                if c.max_concurrent == 0 {
                    return Err(format!(
                        "{}: serve.clients[{i}].max_concurrent must be at least 1",
                        file.display()
                    ));
                }
                if !c.workspace.is_dir() {
                    return Err(format!(
                        "{}: serve.clients[{i}].workspace {} is not a directory",
                        file.display(),
                        c.workspace.display()
                    ));
                }
            }
            cfg.clients = clients;
        }
        Ok(cfg)
    }

    /// The config used without a file: only `own_uid`, on `workspace`.
    pub fn default_for(workspace: &Path, own_uid: u32) -> Self {
        ServeConfig {
            pool_size: 4,
            max_in_flight: 8,
            drain_seconds: 10,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            idle_timeout_seconds: DEFAULT_IDLE_TIMEOUT,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_session_bytes: DEFAULT_MAX_SESSION_BYTES,
            http: HttpConfig::default(),
            clients: vec![ClientRule {
                uid: Some(own_uid),
                gid: None,
                token_sha256: None,
                workspace: workspace.to_path_buf(),
                profiles: None,
                default_profile: None,
                max_concurrent: 8,
                runs_per_minute: default_runs_per_minute(),
                max_tool_calls: default_max_tool_calls(),
                max_connections: default_client_max_connections(),
                max_sessions: default_client_max_sessions(),
                max_session_bytes: default_client_max_session_bytes(),
            }],
        }
    }

    /// The rule whose `token_sha256` is the SHA-256 of `token`. Every rule
    /// is compared, in constant time each, so the answer's timing says
    /// nothing about which digits matched.
    pub fn client_for_token(&self, token: &[u8]) -> Option<&ClientRule> {
        let digest = unhex32(&lackpy_supervisor::sha256::hex(token))?;
        let mut found = None;
        for c in &self.clients {
            if let Some(want) = c.token_sha256.as_deref().and_then(unhex32) {
                if ct_eq(&want, &digest) && found.is_none() {
                    found = Some(c);
                }
            }
        }
        found
    }

    /// Whether any rule admits HTTP clients.
    pub fn has_token_rules(&self) -> bool {
        self.clients.iter().any(|c| c.token_sha256.is_some())
    }

    /// The first rule matching a peer, by uid first, then gid.
    pub fn client_for(&self, uid: u32, gid: u32) -> Option<&ClientRule> {
        self.clients
            .iter()
            .find(|c| c.uid == Some(uid))
            .or_else(|| {
                self.clients
                    .iter()
                    .find(|c| c.uid.is_none() && c.gid == Some(gid))
            })
    }
}

/// Check `[serve.http]`.
fn check_http(mut h: HttpConfig, f: &std::path::Display<'_>) -> Result<HttpConfig, String> {
    if h.allowed_hosts.is_empty() {
        return Err(format!(
            "{f}: serve.http.allowed_hosts is empty; list the Host names clients use, or [\"*\"] to accept any (only behind a proxy that checks Host)"
        ));
    }
    if h.allowed_hosts.iter().any(|x| x == "*") {
        h.allowed_hosts.clear();
    }
    for o in &h.allowed_origins {
        if o != "null" && !o.contains("://") {
            return Err(format!(
                "{f}: serve.http.allowed_origins entry {o:?} needs a scheme (https://host:port)"
            ));
        }
    }
    h.max_body_bytes = in_range(
        h.max_body_bytes,
        1024,
        64 * MIB,
        f,
        "serve.http.max_body_bytes",
    )?;
    h.request_timeout_seconds = in_range(
        h.request_timeout_seconds,
        1,
        300,
        f,
        "serve.http.request_timeout_seconds",
    )?;
    h.max_connections = in_range(
        h.max_connections,
        1,
        MAX_CONNECTIONS,
        f,
        "serve.http.max_connections",
    )?;
    if h.tls_cert.is_some() != h.tls_key.is_some() {
        return Err(format!(
            "{f}: serve.http.tls_cert and serve.http.tls_key go together"
        ));
    }
    Ok(h)
}

/// 32 bytes from 64 hex digits.
fn unhex32(s: &str) -> Option<[u8; 32]> {
    let b = s.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        let hi = (b[2 * i] as char).to_digit(16)?;
        let lo = (b[2 * i + 1] as char).to_digit(16)?;
        *o = u8::try_from(hi * 16 + lo).ok()?;
    }
    Some(out)
}

/// Equality whose time does not depend on where the inputs differ.
fn ct_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    // Keep the compiler from turning the fold into an early exit.
    std::hint::black_box(diff) == 0
}

/// `v` if `lo <= v <= hi`, else an error naming the file and the key.
fn in_range<T: PartialOrd + std::fmt::Display>(
    v: T,
    lo: T,
    hi: T,
    file: &std::path::Display<'_>,
    key: &str,
) -> Result<T, String> {
    if v < lo {
        return Err(format!("{file}: {key} must be at least {lo} (got {v})"));
    }
    if v > hi {
        return Err(format!("{file}: {key} {v} is over the maximum {hi}"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_clients_and_matches_by_uid_then_gid() {
        let dir = std::env::temp_dir();
        let text = format!(
            "[serve]\npool_size = 2\n[[serve.clients]]\nuid = 1000\nworkspace = {:?}\nprofiles = [\"ro\"]\n\
             [[serve.clients]]\ngid = 50\nworkspace = {:?}\n",
            dir, dir
        );
        let c = ServeConfig::parse(&text, Path::new("c.toml"), &dir, 0).unwrap();
        assert_eq!(c.pool_size, 2);
        assert_eq!(
            c.client_for(1000, 7).unwrap().profiles.as_deref(),
            Some(&["ro".to_string()][..])
        );
        assert!(c.client_for(5, 50).unwrap().profiles.is_none());
        assert!(c.client_for(5, 51).is_none());
    }

    #[test]
    fn rejects_bad_config_clearly() {
        let dir = std::env::temp_dir();
        let e =
            ServeConfig::parse("[serve]\nbogus = 1\n", Path::new("c.toml"), &dir, 0).unwrap_err();
        assert!(e.contains("c.toml") && e.contains("bogus"), "{e}");
        let e = ServeConfig::parse(
            "[[serve.clients]]\nworkspace = \"/\"\n",
            Path::new("c.toml"),
            &dir,
            0,
        )
        .unwrap_err();
        assert!(e.contains("needs uid, gid or token_sha256"), "{e}");
        let e = ServeConfig::parse(
            "[[serve.clients]]\nuid = 1\nworkspace = \"/nonexistent-x\"\n",
            Path::new("c.toml"),
            &dir,
            0,
        )
        .unwrap_err();
        assert!(e.contains("not a directory"), "{e}");
        let e = ServeConfig::parse(
            "[serve]\npool_size = 100000\n",
            Path::new("c.toml"),
            &dir,
            0,
        )
        .unwrap_err();
        assert!(e.contains("maximum"), "{e}");
    }

    #[test]
    fn connection_and_session_caps_parse_clamp_and_name_their_key() {
        let dir = std::env::temp_dir();
        let d = ServeConfig::default_for(&dir, 0);
        let rule = &d.clients[0];
        assert!(
            rule.max_connections * 4 <= d.max_connections,
            "room for others"
        );
        assert!(rule.max_sessions < d.max_sessions);
        assert!(rule.max_session_bytes < d.max_session_bytes);
        let text = format!(
            "[serve]\nmax_connections = 10\nidle_timeout_seconds = 7\nmax_sessions = 5\nmax_session_bytes = 1000\n\
             [[serve.clients]]\nuid = 1\nworkspace = {dir:?}\nmax_connections = 3\nmax_sessions = 2\nmax_session_bytes = 100\n\
             [[serve.clients]]\nuid = 2\nworkspace = {dir:?}\nmax_connections = 50\n"
        );
        let c = ServeConfig::parse(&text, Path::new("c.toml"), &dir, 0).unwrap();
        assert_eq!(
            (
                c.max_connections,
                c.idle_timeout_seconds,
                c.max_sessions,
                c.max_session_bytes
            ),
            (10, 7, 5, 1000)
        );
        let one = c.client_for(1, 0).unwrap();
        assert_eq!(
            (one.max_connections, one.max_sessions, one.max_session_bytes),
            (3, 2, 100)
        );
        let two = c.client_for(2, 0).unwrap();
        assert_eq!(
            (two.max_connections, two.max_sessions, two.max_session_bytes),
            (10, 5, 1000),
            "clamped to the server's caps"
        );
        for (text, key) in [
            ("[serve]\nmax_connections = 0\n", "serve.max_connections"),
            (
                "[serve]\nmax_connections = 10000000\n",
                "serve.max_connections",
            ),
            (
                "[serve]\nidle_timeout_seconds = 0\n",
                "serve.idle_timeout_seconds",
            ),
            ("[serve]\nmax_sessions = 0\n", "serve.max_sessions"),
            (
                "[serve]\nmax_session_bytes = 0\n",
                "serve.max_session_bytes",
            ),
        ] {
            let e = ServeConfig::parse(text, Path::new("c.toml"), &dir, 0).unwrap_err();
            assert!(e.contains(key) && e.contains("c.toml"), "{e}");
        }
        for key in ["max_connections", "max_sessions", "max_session_bytes"] {
            let text = format!("[[serve.clients]]\nuid = 1\nworkspace = {dir:?}\n{key} = 0\n");
            let e = ServeConfig::parse(&text, Path::new("c.toml"), &dir, 0).unwrap_err();
            assert!(e.contains(&format!("serve.clients[0].{key}")), "{e}");
        }
        let e = ServeConfig::parse(
            "[serve]\nmax_session_bytes = -1\n",
            Path::new("c.toml"),
            &dir,
            0,
        )
        .unwrap_err();
        assert!(e.contains("max_session_bytes"), "{e}");
    }

    #[test]
    fn token_rules_match_by_digest_only() {
        let dir = std::env::temp_dir();
        // sha256("test")
        let h = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let text = format!(
            "[[serve.clients]]\ntoken_sha256 = \"{h}\"\nworkspace = {dir:?}\n\
             [serve.http]\nallowed_hosts = [\"*\"]\nmax_body_bytes = 4096\n"
        );
        let c = ServeConfig::parse(&text, Path::new("c.toml"), &dir, 0).unwrap();
        assert!(c.client_for_token(b"test").is_some());
        assert!(c.client_for_token(b"tesu").is_none());
        assert!(
            c.client_for_token(h.as_bytes()).is_none(),
            "the digest is not the token"
        );
        assert!(c.client_for(0, 0).is_none());
        assert!(c.http.allowed_hosts.is_empty());
        assert_eq!(c.http.max_body_bytes, 4096);
        let bad = format!("[[serve.clients]]\ntoken_sha256 = \"test\"\nworkspace = {dir:?}\n");
        let e = ServeConfig::parse(&bad, Path::new("c.toml"), &dir, 0).unwrap_err();
        assert!(e.contains("64 hex digits"), "{e}");
        let dup = format!("{text}[[serve.clients]]\ntoken_sha256 = \"{h}\"\nworkspace = {dir:?}\n");
        let dup = dup.replace(
            "[serve.http]\nallowed_hosts = [\"*\"]\nmax_body_bytes = 4096\n",
            "",
        );
        let e = ServeConfig::parse(&dup, Path::new("c.toml"), &dir, 0).unwrap_err();
        assert!(e.contains("same as an earlier"), "{e}");
        let e = ServeConfig::parse(
            "[serve.http]\nallowed_hosts = []\n",
            Path::new("c.toml"),
            &dir,
            0,
        )
        .unwrap_err();
        assert!(e.contains("allowed_hosts"), "{e}");
    }

    #[test]
    fn default_allows_only_own_uid() {
        let c = ServeConfig::default_for(Path::new("/tmp"), 42);
        assert!(c.client_for(42, 0).is_some());
        assert!(c.client_for(43, 0).is_none());
    }
}
