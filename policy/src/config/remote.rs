//! Remote (`transport = "http"`) MCP servers: their `headers` (whose values
//! may hold secrets and are never shown), `${VAR}` references in header
//! values, and the checks a table gets at load.
//!
//! Pure: the environment is passed in as a lookup function.

use std::collections::BTreeMap;
use std::fmt;

/// Most headers one server may send.
pub const MAX_HEADERS: usize = 32;
/// Longest header value (as written, and once expanded).
pub const MAX_HEADER_VALUE: usize = 8 * 1024;
/// Longest `url`.
pub const MAX_URL: usize = 2048;

/// `headers = { Name = "value" }` of an http MCP server. The values may be
/// credentials (literally, or once `${VAR}` is expanded): `Debug` shows the
/// names only, and nothing in lackpy prints a value.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Headers(pub BTreeMap<String, String>);

impl fmt::Debug for Headers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, "<redacted>")))
            .finish()
    }
}

impl Headers {
    /// The header names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Why a `${...}` reference in a value cannot be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VarError {
    /// The variable is not set (and the reference gives no default).
    #[error("the environment variable {0} is not set")]
    Missing(String),
    /// `${` without `}`, or an empty or unusable name.
    #[error("{0}")]
    Syntax(String),
    /// The expanded value is too long.
    #[error("the expanded value is longer than {MAX_HEADER_VALUE} bytes")]
    TooLong,
}

/// Expand the variable references of `template`: `${NAME}`, Claude Code's
/// `${NAME:-default}` and Cursor's `${env:NAME}`; `$$` is a literal `$`,
/// any other `$` stays as it is. `lookup` gives a variable's value.
///
/// # Errors
/// [`VarError::Missing`] naming the first unset variable without a
/// default; [`VarError::Syntax`] for an unterminated or empty reference;
/// [`VarError::TooLong`].
pub fn expand_vars(
    template: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, VarError> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
            continue;
        }
        let Some(body) = after.strip_prefix('{') else {
            out.push('$');
            rest = after;
            continue;
        };
        let Some(end) = body.find('}') else {
            return Err(VarError::Syntax("`${` without a closing `}`".into()));
        };
        let inner = &body[..end];
        rest = &body[end + 1..];
        let inner = inner.strip_prefix("env:").unwrap_or(inner);
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(VarError::Syntax(format!(
                "`${{{inner}}}` does not name an environment variable (letters, digits and _)"
            )));
        }
        match (lookup(name), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(VarError::Missing(name.to_string())),
        }
        if out.len() > MAX_HEADER_VALUE {
            return Err(VarError::TooLong);
        }
    }
    out.push_str(rest);
    if out.len() > MAX_HEADER_VALUE {
        return Err(VarError::TooLong);
    }
    Ok(out)
}

/// The host of an `http://` or `https://` URL, and whether it is `https`.
///
/// # Errors
/// A message saying what is wrong: another scheme, no host, user
/// information (`user:pass@`: credentials belong in `headers`), spaces or
/// control characters, or a URL longer than [`MAX_URL`].
pub fn url_host(url: &str) -> Result<(String, bool), String> {
    if url.len() > MAX_URL {
        return Err(format!("the url is longer than {MAX_URL} bytes"));
    }
    if url.chars().any(|c| c.is_control() || c == ' ') {
        return Err("the url holds spaces or control characters".into());
    }
    let (rest, tls) = if let Some(r) = url.strip_prefix("https://") {
        (r, true)
    } else if let Some(r) = url.strip_prefix("http://") {
        (r, false)
    } else {
        return Err(format!(
            "{url:?} is not an http:// or https:// url (a remote MCP server speaks Streamable HTTP)"
        ));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err(
            "the url holds user information (user:password@): put credentials in `headers` instead"
                .into(),
        );
    }
    let host = if let Some(v6) = authority.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, _)) => h.to_string(),
            None => return Err("the url's IPv6 host has no closing `]`".into()),
        }
    } else {
        authority
            .rsplit_once(':')
            .map_or(authority, |(h, _)| h)
            .to_string()
    };
    if host.is_empty() {
        return Err("the url has no host".into());
    }
    Ok((host.to_ascii_lowercase(), tls))
}

/// Whether `host` (from [`url_host`]) names this machine's loopback.
pub fn is_loopback_host(host: &str) -> bool {
    host == "localhost"
        || host.ends_with(".localhost")
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|a| a.is_loopback())
}

/// Whether `name` is a valid HTTP header name (an RFC 9110 token).
pub fn valid_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 256
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The keys an http server's table may not have (they describe a process).
pub const PROCESS_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "workspace",
    "read_paths",
    "write_paths",
    "network",
    "memory_mb",
    "max_procs",
    "trust_workspace_code",
];

/// Check the http-specific part of a server table: `url` (required,
/// http(s), no user information) and `headers` (names valid, values with
/// well-formed `${VAR}` references, within the caps). `present` is the
/// set of process keys the table has (see [`PROCESS_KEYS`]).
///
/// Returns warnings (plain `http://` to a host other than loopback sends
/// the headers in clear).
///
/// # Errors
/// `(key, message)`: the offending key (relative to the table) and why.
pub fn check_http(
    url: Option<&str>,
    headers: &Headers,
    present: &[&str],
) -> Result<Vec<String>, (String, String)> {
    if let Some(k) = present.first() {
        return Err((
            (*k).to_string(),
            format!(
                "`{k}` has no meaning for transport = \"http\" (there is no process: the supervisor connects to `url`); remove it"
            ),
        ));
    }
    let Some(url) = url.filter(|u| !u.is_empty()) else {
        return Err((
            "url".into(),
            "transport = \"http\" needs `url = \"https://…/mcp\"`".into(),
        ));
    };
    let (host, tls) = url_host(url).map_err(|e| ("url".to_string(), e))?;
    if headers.0.len() > MAX_HEADERS {
        return Err(("headers".into(), format!("more than {MAX_HEADERS} headers")));
    }
    for (name, value) in &headers.0 {
        if !valid_header_name(name) {
            return Err((
                format!("headers.{name}"),
                "not a valid HTTP header name".into(),
            ));
        }
        if value.len() > MAX_HEADER_VALUE {
            return Err((
                format!("headers.{name}"),
                format!("the value is longer than {MAX_HEADER_VALUE} bytes"),
            ));
        }
        // Syntax only: every variable "exists" here.
        if let Err(e @ VarError::Syntax(_)) = expand_vars(value, &|_| Some(String::new())) {
            return Err((format!("headers.{name}"), e.to_string()));
        }
    }
    let mut warnings = Vec::new();
    if !tls && !is_loopback_host(&host) {
        warnings.push(format!(
            "url {url:?} is plain http:// to {host}, which is not this machine: the headers (tokens) travel in clear; use https://"
        ));
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expansion_forms() {
        let x = |t: &str| expand_vars(t, &env);
        assert_eq!(x("Bearer ${TOKEN}").unwrap(), "Bearer s3cret");
        assert_eq!(x("Bearer ${env:TOKEN}").unwrap(), "Bearer s3cret");
        assert_eq!(x("${NOPE:-dflt}/${TOKEN:-x}").unwrap(), "dflt/s3cret");
        assert_eq!(x("a$b $$ ${EMPTY}.").unwrap(), "a$b $ .");
        assert_eq!(x("${NOPE}"), Err(VarError::Missing("NOPE".into())));
        assert!(matches!(x("${TOKEN"), Err(VarError::Syntax(_))));
        assert!(matches!(x("${}"), Err(VarError::Syntax(_))));
        assert!(matches!(x("${a b}"), Err(VarError::Syntax(_))));
        let big = |_: &str| Some("x".repeat(MAX_HEADER_VALUE));
        assert_eq!(expand_vars("${A}${A}", &big), Err(VarError::TooLong));
    }

    #[test]
    fn urls_and_hosts() {
        assert_eq!(
            url_host("https://Example.com:8443/mcp").unwrap(),
            ("example.com".into(), true)
        );
        assert_eq!(
            url_host("http://127.0.0.1:9/mcp").unwrap(),
            ("127.0.0.1".into(), false)
        );
        assert_eq!(
            url_host("http://[::1]:9/mcp").unwrap(),
            ("::1".into(), false)
        );
        assert!(url_host("ftp://x/").is_err());
        assert!(url_host("https:///mcp").is_err());
        assert!(url_host("https://u:p@host/mcp")
            .unwrap_err()
            .contains("headers"));
        assert!(url_host("https://host/a b").is_err());
        assert!(is_loopback_host("localhost") && is_loopback_host("127.3.2.1"));
        assert!(is_loopback_host("::1") && !is_loopback_host("10.0.0.1"));
    }

    #[test]
    fn http_tables() {
        let h = |pairs: &[(&str, &str)]| {
            Headers(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        };
        let ok = h(&[("Authorization", "Bearer ${TOKEN}")]);
        assert_eq!(check_http(Some("https://h/mcp"), &ok, &[]), Ok(vec![]));
        assert_eq!(
            check_http(Some("http://localhost:1/mcp"), &ok, &[]),
            Ok(vec![])
        );
        let w = check_http(Some("http://h.example/mcp"), &ok, &[]).unwrap();
        assert!(w[0].contains("in clear"), "{w:?}");
        assert_eq!(check_http(None, &ok, &[]).unwrap_err().0, "url");
        assert_eq!(
            check_http(Some("https://h/"), &ok, &["command"])
                .unwrap_err()
                .0,
            "command"
        );
        let bad = h(&[("Bad Name", "x")]);
        assert_eq!(
            check_http(Some("https://h/"), &bad, &[]).unwrap_err().0,
            "headers.Bad Name"
        );
        let unterminated = h(&[("A", "${X")]);
        assert!(check_http(Some("https://h/"), &unterminated, &[]).is_err());
        // Missing variables are fine at load (they are looked up when connecting).
        let missing = h(&[("A", "${UNSET_AT_LOAD}")]);
        assert!(check_http(Some("https://h/"), &missing, &[]).is_ok());
        // Debug never shows a value.
        let d = format!("{:?}", h(&[("Authorization", "Bearer literal-token")]));
        assert!(
            d.contains("Authorization") && !d.contains("literal-token"),
            "{d}"
        );
    }
}
