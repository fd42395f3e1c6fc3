//! `[mcp] host_configs`: the MCP server lists of host applications (Claude
//! Desktop, Claude Code, Cursor, or any file of that shape) as more tool
//! sources.
//!
//! An entry is a known host name or a path (`~/` is the home directory):
//!
//! | entry | file | read |
//! |---|---|---|
//! | `claude-desktop` | `~/.config/Claude/claude_desktop_config.json` | `mcpServers` |
//! | `claude-code` | `~/.claude.json` | `projects[<workspace>].mcpServers`, then `mcpServers` |
//! | `cursor` | `~/.cursor/mcp.json` | `mcpServers` |
//!
//! Each server is `{command, args, env}` (stdio; `type` absent or
//! `"stdio"`) or `{type: "http", url, headers}` (Cursor: `url` without a
//! `type`); `"disabled": true` skips it, `type = "sse"` is not supported.
//! `${VAR}`, `${VAR:-default}` and `${env:VAR}` in `env` values are
//! expanded when the file is read, in `headers` when connecting.
//!
//! Files are hostile input: read with a size cap, every count and length
//! bounded. A host config file in the program-writable set (the workspace
//! minus `.lackpy/`) is refused with a config error naming it, so
//! project-level files (`<workspace>/.mcp.json`, `<workspace>/.cursor/mcp.json`)
//! are never read. A missing file is a warning; a malformed one (or a
//! malformed entry) is a warning naming the file and the reason: one broken
//! host application never breaks lackpy. Servers read here run exactly as
//! an `[mcp_servers]` table with the defaults would: a stdio one in a child
//! jail with the workspace read-only and no network; an http one as a
//! connection of the supervisor.

use super::child::config_path;
use lackpy_policy::config::{remote, Config, Headers, McpServer};
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Largest host config file read. Why 16 MiB: Claude Code's `~/.claude.json`
/// also keeps per-project state and grows to several MiB.
pub const MAX_HOST_CONFIG_BYTES: u64 = 16 * 1024 * 1024;
/// Most servers taken from one file.
const MAX_SERVERS_PER_FILE: usize = 256;
/// Most JSON values (as `mcp_lines::count_values` counts them) of the
/// `mcpServers` tables read from one file, counted before they are parsed.
/// Why: the tables are the only part of the file parsed into `serde_json`
/// values (everything else is skipped unbuilt), and 16 MiB of `0,0,…`
/// there would be some 600 MiB of them; [`MAX_SERVERS_PER_FILE`] honest
/// servers of [`MAX_ARGS`] arguments and [`MAX_ENV`] variables each hold
/// far fewer.
const MAX_SERVERS_VALUES: usize = 256 * 1024;
/// Most `args` of one server, and the longest one.
const MAX_ARGS: usize = 256;
const MAX_ARG_LEN: usize = 8192;
/// Most `env` entries of one server.
const MAX_ENV: usize = 256;
/// Most entries in `host_configs`.
const MAX_HOST_CONFIGS: usize = 32;

/// The file a `host_configs` entry names.
pub fn host_config_path(entry: &str, workspace: &Path) -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    match entry {
        "claude-desktop" => home.map(|h| h.join(".config/Claude/claude_desktop_config.json")),
        "claude-code" => home.map(|h| h.join(".claude.json")),
        "cursor" => home.map(|h| h.join(".cursor/mcp.json")),
        _ => Some(config_path(entry, workspace)),
    }
}

/// Read every file of `config.mcp_host_configs` and set
/// `config.mcp_host_servers` (precedence: the files in their order; a
/// name `[mcp_servers]` or an earlier file already uses is left out with a
/// warning). Returns the warnings.
///
/// # Errors
/// A config error naming the file when a host config file lies in the
/// program-writable set of `workspace` (canonical).
pub fn load(config: &mut Config, workspace: &Path) -> Result<Vec<String>, String> {
    let mut warnings = Vec::new();
    let mut servers: Vec<(String, McpServer)> = Vec::new();
    let entries = config.mcp_host_configs.clone();
    if entries.len() > MAX_HOST_CONFIGS {
        warnings.push(format!(
            "[mcp] host_configs: only the first {MAX_HOST_CONFIGS} entries are read"
        ));
    }
    for entry in entries.iter().take(MAX_HOST_CONFIGS) {
        let Some(path) = host_config_path(entry, workspace) else {
            warnings.push(format!(
                "[mcp] host_configs: {entry:?} needs HOME, which is not set; skipped"
            ));
            continue;
        };
        if crate::trusted::in_writable_set(&path, workspace) {
            return Err(format!(
                "config error: [mcp] host_configs: {}",
                crate::trusted::refusal("the host config file", &path, workspace)
            ));
        }
        let text = match read_capped(&path) {
            Ok(Some(t)) => t,
            Ok(None) => {
                warnings.push(format!(
                    "[mcp] host_configs: {} ({entry}) does not exist; no servers read from it",
                    path.display()
                ));
                continue;
            }
            Err(why) => {
                warnings.push(format!(
                    "[mcp] host_configs: {}: {why}; no servers read from it",
                    path.display()
                ));
                continue;
            }
        };
        let (found, mut w) = parse(&text, &path, workspace);
        warnings.append(&mut w);
        for (name, server) in found {
            let taken_by = if config.mcp_servers.contains_key(&name) {
                Some("[mcp_servers.".to_string() + &name + "]")
            } else {
                servers
                    .iter()
                    .find(|(n, _)| *n == name)
                    .and_then(|(_, s)| s.origin.as_ref())
                    .map(|f| format!("the server of that name in {}", f.display()))
            };
            if let Some(by) = taken_by {
                warnings.push(format!(
                    "mcp server {name} (from {}) is hidden by {by}, so its tools are not available",
                    path.display()
                ));
                continue;
            }
            servers.push((name, server));
        }
    }
    config.mcp_host_servers = servers;
    Ok(warnings)
}

/// The file's text: `None` when it does not exist.
fn read_capped(path: &Path) -> Result<Option<String>, String> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: opening a FIFO put there must not wait for a writer (the
    // `is_file` check below then refuses it).
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot be read: {e}")),
    };
    let meta = f.metadata().map_err(|e| format!("cannot be read: {e}"))?;
    if !meta.is_file() {
        return Err("is not a regular file".into());
    }
    let mut buf = Vec::new();
    f.take(MAX_HOST_CONFIG_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot be read: {e}"))?;
    if buf.len() as u64 > MAX_HOST_CONFIG_BYTES {
        return Err(format!("is larger than {MAX_HOST_CONFIG_BYTES} bytes"));
    }
    String::from_utf8(buf)
        .map(Some)
        .map_err(|_| "is not UTF-8".into())
}

/// The servers of one host config file's text (`file` for messages; the
/// workspace selects Claude Code's per-project entry). Pure apart from the
/// environment lookups of `${VAR}` in `env`.
pub fn parse(text: &str, file: &Path, workspace: &Path) -> (Vec<(String, McpServer)>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut out: Vec<(String, McpServer)> = Vec::new();
    // Only the `mcpServers` tables are taken (as raw text); the rest of the
    // file (Claude Code's per-project state) is skipped without building
    // anything. serde_json bounds nesting at 128 levels.
    let tables = match server_tables(text, workspace) {
        Ok(t) => t,
        Err(e) => {
            let what = if e.is_syntax() || e.is_eof() {
                "is not valid JSON"
            } else {
                "is not a JSON object"
            };
            warnings.push(format!(
                "[mcp] host_configs: {} {what} ({e}); no servers read from it",
                file.display()
            ));
            return (out, warnings);
        }
    };
    let values: usize = tables
        .iter()
        .flatten()
        .map(|raw| super::mcp_lines::count_values(raw.get().as_bytes()))
        .fold(0, usize::saturating_add);
    if values > MAX_SERVERS_VALUES {
        warnings.push(format!(
            "[mcp] host_configs: {}: its `mcpServers` hold more than {MAX_SERVERS_VALUES} JSON values (MAX_SERVERS_VALUES); no servers read from it",
            file.display()
        ));
        return (out, warnings);
    }
    let [project, top] =
        tables.map(|raw| raw.and_then(|r| serde_json::from_str::<Value>(r.get()).ok()));
    let mut maps: Vec<&serde_json::Map<String, Value>> = Vec::new();
    // Claude Code: the workspace's own entry wins over the user-wide one.
    if let Some(Value::Object(p)) = &project {
        maps.push(p);
    }
    match &top {
        Some(Value::Object(m)) => maps.push(m),
        Some(_) => warnings.push(format!(
            "[mcp] host_configs: {}: `mcpServers` is not an object; ignored",
            file.display()
        )),
        None => {}
    }
    for m in maps {
        for (name, entry) in m {
            if out.len() >= MAX_SERVERS_PER_FILE {
                warnings.push(format!(
                    "[mcp] host_configs: {}: only the first {MAX_SERVERS_PER_FILE} servers are read",
                    file.display()
                ));
                return (out, warnings);
            }
            if out.iter().any(|(n, _)| n == name) {
                continue;
            }
            match server_of(entry, file) {
                Ok(Some(s)) => out.push((name.clone(), s)),
                Ok(None) => {}
                Err(why) => warnings.push(format!(
                    "[mcp] host_configs: {}: server {:?}: {why}; skipped",
                    file.display(),
                    clip(name)
                )),
            }
        }
    }
    (out, warnings)
}

/// The raw text of the two `mcpServers` tables of a host config file:
/// `projects[<workspace>].mcpServers` (Claude Code) and the top-level one.
/// Nothing else of the file is kept or built; a `projects` that is not an
/// object of objects is ignored.
///
/// # Errors
/// The file is not JSON, or not an object.
fn server_tables<'a>(
    text: &'a str,
    workspace: &Path,
) -> Result<[Option<&'a RawValue>; 2], serde_json::Error> {
    #[derive(serde::Deserialize)]
    struct Doc<'a> {
        #[serde(rename = "mcpServers", borrow, default)]
        servers: Option<&'a RawValue>,
        #[serde(borrow, default)]
        projects: Option<&'a RawValue>,
    }
    let doc: Doc<'a> = serde_json::from_str(text)?;
    let ws = workspace.to_string_lossy();
    let project = doc.projects.and_then(|p| {
        let mut de = serde_json::Deserializer::from_str(p.get());
        let entry = serde::de::DeserializeSeed::deserialize(ProjectOf(&ws), &mut de).ok()??;
        serde_json::from_str::<Doc<'a>>(entry.get()).ok()?.servers
    });
    Ok([project, doc.servers])
}

/// The entry of one key (a workspace's path) in Claude Code's `projects`
/// object, every other entry skipped unbuilt.
struct ProjectOf<'w>(&'w str);

impl<'de> serde::de::DeserializeSeed<'de> for ProjectOf<'_> {
    type Value = Option<&'de RawValue>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ProjectOf<'_> {
    type Value = Option<&'de RawValue>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object of projects")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if found.is_none() && key == self.0 {
                found = Some(map.next_value::<&'de RawValue>()?);
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

fn clip(s: &str) -> String {
    s.chars().take(100).collect()
}

/// One `mcpServers` entry (`None`: disabled).
fn server_of(entry: &Value, file: &Path) -> Result<Option<McpServer>, String> {
    let Some(obj) = entry.as_object() else {
        return Err("not an object".into());
    };
    if obj.get("disabled").and_then(Value::as_bool) == Some(true) {
        return Ok(None);
    }
    let string = |k: &str| -> Result<Option<String>, String> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.len() <= remote::MAX_URL.max(MAX_ARG_LEN) => {
                Ok(Some(s.clone()))
            }
            Some(Value::String(_)) => Err(format!("`{k}` is too long")),
            Some(_) => Err(format!("`{k}` is not a string")),
        }
    };
    let ty = string("type")?;
    let url = string("url")?;
    let transport = match (ty.as_deref(), &url) {
        (Some("http" | "streamable-http" | "streamableHttp"), _) | (None, Some(_)) => "http",
        (Some("stdio") | None, None) => "stdio",
        (Some("sse"), _) => {
            return Err("type \"sse\" (the older HTTP+SSE transport) is not supported: lackpy speaks Streamable HTTP".into())
        }
        (Some("stdio"), Some(_)) => return Err("type \"stdio\" with a `url`".into()),
        (Some(other), _) => return Err(format!("unknown type {:?}", clip(other))),
    };
    let string_map = |k: &str, max: usize| -> Result<BTreeMap<String, String>, String> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(m)) if m.len() <= max => m
                .iter()
                .map(|(a, v)| match v {
                    Value::String(s) if s.len() <= remote::MAX_HEADER_VALUE => {
                        Ok((a.clone(), s.clone()))
                    }
                    _ => Err(format!(
                        "`{k}.{}` is not a string (or is too long)",
                        clip(a)
                    )),
                })
                .collect(),
            Some(Value::Object(_)) => Err(format!("`{k}` has more than {max} entries")),
            Some(_) => Err(format!("`{k}` is not an object")),
        }
    };
    let origin = Some(file.to_path_buf());
    if transport == "http" {
        let headers = Headers(string_map("headers", remote::MAX_HEADERS)?);
        let mut present = Vec::new();
        for k in ["command", "args", "env"] {
            if obj.get(k).is_some_and(|v| !v.is_null()) {
                present.push(k);
            }
        }
        let w = remote::check_http(url.as_deref(), &headers, &present)
            .map_err(|(key, msg)| format!("{key}: {msg}"))?;
        if let Some(w) = w.first() {
            return Err(format!(
                "{w} (fix the url; lackpy does not send tokens in clear from a host config)"
            ));
        }
        return Ok(Some(McpServer {
            transport: "http".into(),
            url,
            headers,
            origin,
            ..McpServer::default()
        }));
    }
    let Some(command) = string("command")?.filter(|c| !c.is_empty()) else {
        return Err("no `command` (and no `url`)".into());
    };
    let args = match obj.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) if a.len() <= MAX_ARGS => a
            .iter()
            .map(|v| match v {
                Value::String(s) if s.len() <= MAX_ARG_LEN && !s.contains('\0') => Ok(s.clone()),
                _ => {
                    Err("`args` holds something other than a string (or one too long)".to_string())
                }
            })
            .collect::<Result<_, _>>()?,
        Some(Value::Array(_)) => return Err(format!("more than {MAX_ARGS} `args`")),
        Some(_) => return Err("`args` is not an array".into()),
    };
    let mut env = BTreeMap::new();
    for (k, v) in string_map("env", MAX_ENV)? {
        if k.is_empty() || k.contains(['=', '\0']) || v.contains('\0') {
            return Err(format!(
                "`env` has an unusable variable name {:?}",
                clip(&k)
            ));
        }
        let v = remote::expand_vars(&v, &|n| std::env::var(n).ok())
            .map_err(|e| format!("env.{k}: {e}"))?;
        env.insert(k, v);
    }
    if command.contains('\0') {
        return Err("`command` holds a NUL byte".into());
    }
    Ok(Some(McpServer {
        transport: "stdio".into(),
        command: Some(command),
        args,
        env,
        origin,
        ..McpServer::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_of_the_three_hosts() {
        let ws = Path::new("/w/proj");
        let f = Path::new("/h/.claude.json");
        let text = r#"{
            "numStartups": 3,
            "mcpServers": {
                "fs": {"type": "stdio", "command": "srv", "args": ["-x"], "env": {"A": "1"}},
                "web": {"type": "http", "url": "https://h.example/mcp",
                        "headers": {"Authorization": "Bearer ${TOKEN}"}},
                "old": {"type": "sse", "url": "https://h.example/sse"},
                "off": {"command": "x", "disabled": true},
                "bad": {"command": 3},
                "clear": {"url": "http://h.example/mcp", "headers": {"Authorization": "x"}}
            },
            "projects": {"/w/proj": {"mcpServers": {"fs": {"command": "proj-srv"}}}}
        }"#;
        let (servers, warnings) = parse(text, f, ws);
        let names: Vec<&str> = servers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["fs", "web"], "{warnings:?}");
        // The project's own entry wins.
        assert_eq!(servers[0].1.command.as_deref(), Some("proj-srv"));
        assert_eq!(servers[1].1.transport, "http");
        assert_eq!(servers[1].1.origin.as_deref(), Some(f));
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings.iter().any(|w| w.contains("sse")));
        assert!(warnings.iter().any(|w| w.contains("in clear")));
        // Cursor: url without type is http.
        let (s, _) = parse(r#"{"mcpServers": {"c": {"url": "https://x/mcp"}}}"#, f, ws);
        assert_eq!(s[0].1.transport, "http");
        // Malformed: a warning, nothing read.
        let (s, w) = parse("{not json", f, ws);
        assert!(s.is_empty() && w[0].contains("not valid JSON"), "{w:?}");
        // A missing variable in env skips the server.
        let (s, w) = parse(
            r#"{"mcpServers": {"e": {"command": "x", "env": {"K": "${LACKPY_TEST_SURELY_UNSET}"}}}}"#,
            f,
            ws,
        );
        assert!(
            s.is_empty() && w[0].contains("LACKPY_TEST_SURELY_UNSET"),
            "{w:?}"
        );
    }

    #[test]
    fn only_the_server_tables_are_parsed_and_they_are_counted() {
        let ws = Path::new("/w/proj");
        let f = Path::new("/h/.claude.json");
        // Other state, however large, is skipped; a `projects` that is not
        // an object of objects is ignored.
        let state = "0,".repeat(MAX_SERVERS_VALUES * 2);
        for projects in [
            format!(r#"{{"/other": {{"history": [{state}0]}}, "/w/proj": {{"x": 1}}}}"#),
            "[1, 2]".to_string(),
            r#"{"/w/proj": 7}"#.to_string(),
        ] {
            let text = format!(
                r#"{{"projects": {projects}, "mcpServers": {{"a": {{"command": "srv"}}}}}}"#
            );
            let (s, w) = parse(&text, f, ws);
            assert_eq!(s.len(), 1, "{projects:.80}: {w:?}");
            assert_eq!(s[0].1.command.as_deref(), Some("srv"));
        }
        // Tables of too many values are not parsed.
        let many = format!(r#"{{"mcpServers": {{"a": {{"command": "srv", "x": [{state}0]}}}}}}"#);
        let (s, w) = parse(&many, f, ws);
        assert!(s.is_empty() && w[0].contains("MAX_SERVERS_VALUES"), "{w:?}");
        // Valid JSON that is not an object: a warning.
        let (s, w) = parse("3", f, ws);
        assert!(s.is_empty() && w[0].contains("not a JSON object"), "{w:?}");
    }

    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("host.json");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let e = read_capped(&fifo).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
    }

    #[test]
    fn files_in_the_workspace_are_refused_and_missing_ones_warn() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        std::fs::write(ws.join("mcp.json"), r#"{"mcpServers": {}}"#).unwrap();
        let mut cfg = Config {
            mcp_host_configs: vec!["mcp.json".into()],
            ..Config::default()
        };
        let e = load(&mut cfg, &ws).unwrap_err();
        assert!(e.contains("mcp.json") && e.contains("config error"), "{e}");
        let mut cfg = Config {
            mcp_host_configs: vec!["/nonexistent/lackpy/host.json".into()],
            ..Config::default()
        };
        let w = load(&mut cfg, &ws).unwrap();
        assert!(w[0].contains("does not exist"), "{w:?}");
    }
}
