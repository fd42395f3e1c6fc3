//! The workspace's cache of MCP servers' tool lists
//! (`<workspace>/.lackpy/cache/mcp-<digest>.json`), so that listing tools,
//! validating or running a program that uses none of a server's tools does
//! not start the server.
//!
//! An entry holds the server's name, its identity and the tools it listed
//! (as `tools/list` returned them). The identity is a SHA-256 over what
//! decides what the server is: its table (command, arguments, the names of
//! its environment variables — never their values —, jail keys), the
//! workspace, and the path, size and modification time of the program (as
//! found and as resolved) and of every argument naming a file. Any change
//! makes the entry stale and the server is asked again.
//!
//! Files are read and written beneath the workspace's control directory
//! with [`lackpy_beneath`] (no symlink followed; programs cannot write
//! there). A cached listing is treated exactly like one from the live
//! server: hostile input, bounded in size and converted by the same code.

use rmcp::model::Tool;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Largest cache file read (a listing of at most 512 tools fits easily).
const MAX_CACHE_BYTES: u64 = 8 * 1024 * 1024;

/// Subdirectory of `.lackpy/` holding the entries.
const CACHE_DIR: &str = "cache";

#[derive(Serialize, Deserialize)]
struct Entry {
    server: String,
    identity: String,
    tools: Vec<Tool>,
}

/// The identity of a server from its description (`parts`: the table's
/// fields that matter, one per line) and the files it runs (`files`: each
/// contributes its path, size and modification time, or "absent").
pub fn identity(parts: &str, files: &[PathBuf]) -> String {
    use std::fmt::Write;
    use std::os::unix::fs::MetadataExt;
    let mut s = String::from(parts);
    for f in files {
        let _ = match std::fs::metadata(f) {
            Ok(m) => writeln!(
                s,
                "file {} {} {}.{}",
                f.display(),
                m.len(),
                m.mtime(),
                m.mtime_nsec()
            ),
            Err(_) => writeln!(s, "file {} absent", f.display()),
        };
    }
    crate::sha256::hex(s.as_bytes())
}

/// The file name of `server`'s entry (a digest: server names are free text).
fn file_name(server: &str) -> String {
    let d = crate::sha256::hex(server.as_bytes());
    format!("mcp-{}.json", d.get(..24).unwrap_or(&d))
}

/// The cached tool list of `server` in `workspace` when its identity is
/// still `identity`; `None` when there is none, it is stale or unreadable.
pub fn load(workspace: &Path, server: &str, identity: &str) -> Option<Vec<Tool>> {
    let ctl = lackpy_beneath::open_control(workspace, false).ok()??;
    let dir = ctl.subdir(CACHE_DIR, false).ok()??;
    let text = dir.read_text(&file_name(server), MAX_CACHE_BYTES).ok()??;
    // Counted before it is parsed, as a live listing is: an entry holding
    // more values than one may (written by an older lackpy, which did not
    // count them) would cost hundreds of MiB as `serde_json` values.
    if super::mcp_lines::count_values(text.as_bytes()) > super::mcp::MAX_LIST_VALUES {
        return None;
    }
    let e: Entry = serde_json::from_str(&text).ok()?;
    (e.server == server && e.identity == identity).then_some(e.tools)
}

/// Record `tools` as what `server` (of `identity`) lists in `workspace`.
///
/// # Errors
/// The control directory or the file cannot be written (the caller goes
/// on without a cache).
pub fn store(workspace: &Path, server: &str, identity: &str, tools: &[Tool]) -> Result<(), String> {
    let body = serde_json::to_vec(&serde_json::json!({
        "server": server,
        "identity": identity,
        "tools": tools,
    }))
    .map_err(|e| e.to_string())?;
    let ctl = lackpy_beneath::open_control(workspace, true)
        .map_err(|e| e.to_string())?
        .ok_or("no control directory")?;
    let dir = ctl
        .subdir(CACHE_DIR, true)
        .map_err(|e| e.to_string())?
        .ok_or("no cache directory")?;
    dir.write_atomic(&file_name(server), &body)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Tool {
        serde_json::from_value(serde_json::json!({
            "name": name,
            "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}
        }))
        .unwrap()
    }

    #[test]
    fn round_trip_and_staleness() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        let prog = ws.join("prog");
        std::fs::write(&prog, "a").unwrap();
        let id = identity("command x\n", std::slice::from_ref(&prog));
        assert_eq!(id, identity("command x\n", std::slice::from_ref(&prog)));
        assert_ne!(id, identity("command y\n", std::slice::from_ref(&prog)));
        assert!(load(&ws, "s", &id).is_none());
        store(&ws, "s", &id, &[tool("t1"), tool("t2")]).unwrap();
        let got = load(&ws, "s", &id).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].name, "t2");
        // Another server's name, another identity: no entry.
        assert!(load(&ws, "other", &id).is_none());
        assert!(load(&ws, "s", "0").is_none());
        // The program changed (size): a new identity.
        std::fs::write(&prog, "ab").unwrap();
        assert_ne!(id, identity("command x\n", std::slice::from_ref(&prog)));
        // A corrupt entry is no entry.
        let f = ws.join(".lackpy/cache").join(file_name("s"));
        std::fs::write(&f, "{not json").unwrap();
        assert!(load(&ws, "s", &id).is_none());
        // An entry of more values than a listing may hold is not parsed.
        store(&ws, "s", &id, &[tool("t1")]).unwrap();
        assert!(load(&ws, "s", &id).is_some());
        let many = format!(
            "{{\"server\":\"s\",\"identity\":{id:?},\"tools\":[{{\"name\":\"t\",\"inputSchema\":{{\"enum\":[{}0]}}}}]}}",
            "0,".repeat(super::super::mcp::MAX_LIST_VALUES)
        );
        std::fs::write(&f, many).unwrap();
        assert!(load(&ws, "s", &id).is_none());
    }

    #[test]
    fn a_symlinked_cache_dir_is_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.join(".lackpy")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), ws.join(".lackpy/cache")).unwrap();
        assert!(store(&ws, "s", "id", &[tool("t")]).is_err());
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }
}
