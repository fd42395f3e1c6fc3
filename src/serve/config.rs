//! `[serve]` configuration: who may connect, with which workspace and
//! profiles, and under which quotas.
//!
//! ```toml
//! [serve]
//! pool_size = 4          # warm executor workers per workspace
//! max_in_flight = 8      # runs executing at once, all clients together
//! drain_seconds = 10     # SIGTERM: how long in-flight runs may finish
//!
//! [[serve.clients]]
//! uid = 1000             # and/or gid = 1000; a rule with neither matches nobody
//! workspace = "/srv/ws/alice"
//! profiles = ["readonly"]   # allowed profiles (absent: any; ad-hoc tool lists only when absent)
//! default_profile = "readonly"
//! max_concurrent = 2     # runs in flight for this client
//! runs_per_minute = 600
//! max_tool_calls = 100000  # tool calls per connection
//! ```
//!
//! Without any `[[serve.clients]]`, exactly one client is allowed: the uid
//! the server runs as, on the `--workspace` directory.

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
    /// Who may connect.
    pub clients: Vec<ClientRule>,
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
    clients: Vec<ClientRule>,
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
        let parsed: File = toml::from_str(text).map_err(|e| format!("{}: {e}", file.display()))?;
        let raw = parsed.serve.unwrap_or(Raw {
            pool_size: None,
            max_in_flight: None,
            drain_seconds: None,
            clients: Vec::new(),
        });
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
        if !raw.clients.is_empty() {
            for (i, c) in raw.clients.iter().enumerate() {
                if c.uid.is_none() && c.gid.is_none() {
                    return Err(format!(
                        "{}: serve.clients[{i}] needs uid or gid (a rule matching nobody is a mistake)",
                        file.display()
                    ));
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
            cfg.clients = raw.clients;
        }
        Ok(cfg)
    }

    /// The config used without a file: only `own_uid`, on `workspace`.
    pub fn default_for(workspace: &Path, own_uid: u32) -> Self {
        ServeConfig {
            pool_size: 4,
            max_in_flight: 8,
            drain_seconds: 10,
            clients: vec![ClientRule {
                uid: Some(own_uid),
                gid: None,
                workspace: workspace.to_path_buf(),
                profiles: None,
                default_profile: None,
                max_concurrent: 8,
                runs_per_minute: default_runs_per_minute(),
                max_tool_calls: default_max_tool_calls(),
            }],
        }
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
        assert!(e.contains("needs uid or gid"), "{e}");
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
    fn default_allows_only_own_uid() {
        let c = ServeConfig::default_for(Path::new("/tmp"), 42);
        assert!(c.client_for(42, 0).is_some());
        assert!(c.client_for(43, 0).is_none());
    }
}
