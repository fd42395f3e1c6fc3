//! Configuration: tool specs, the toolbox, profiles, `[sandbox]`,
//! `[inference]` and `[mcp_servers]`, compatible with the original lackpy's
//! `.lackpy/config.toml` and `.kit` files. Pure: callers read the files and
//! hand the text in (the CLI's `cmd/common.rs` does the disk side).
//!
//! # Config file keys (`.lackpy/config.toml`, user `config.toml`)
//! - `[[tools]]`: `name`, `provider`, `description`, `args = [{name, type,
//!   description}]`, `returns`, `grade_w` (0–3), `effects_ceiling` (0–3),
//!   `docs`, `provider_config = {...}`; any other key (`module`,
//!   `function`, `command`, `argv`, ...) goes into `provider_config`. An
//!   entry named like a shipped builtin overrides it.
//! - `[[virtual_tools]]`: same shape; provider `virtual`.
//! - `[profiles.NAME]`: `tools` = a list of names, a mapping
//!   `{alias = "tool"}`, a nested mapping `{alias = {tool = "tool"}}`, or
//!   the name of a kit (`"none"` = no tools); `extra_tools = [...]`;
//!   `description`; `docs`; optional `[profiles.NAME.sandbox]` with the
//!   `[sandbox]` keys below, applied on top of the global ones.
//! - `[profile] default = "NAME"` (also the original's `[kit] default`):
//!   the profile used when a call names neither a profile nor tools.
//! - `[sandbox]`: `timeout_seconds` (→ wall clock), `memory_mb`, and this
//!   project's extras `fuel`, `max_tool_calls` (or `tool_calls`),
//!   `stdout_bytes`, `result_bytes`, `source_bytes`, `max_depth`, `wall_ms`,
//!   `memory_bytes`, `write_mb` (or `write_bytes`: what a run's
//!   `write_file`/`edit_file` calls may write in all, default 64 MiB;
//!   see [`crate::wire::Limits::write_bytes`]). `enabled` (the original's) is accepted and ignored:
//!   the jail is always on. `lower = ["seccomp", ...]` (global `[sandbox]`
//!   only) lowers the named jail layers ([`JAIL_LAYERS`]); every run then
//!   records the degraded level in its trace. An unknown name is an error.
//! - `[inference]`: `order`, `mode`, `[inference.providers.NAME]` with
//!   `plugin`, `model`, `base_url`/`host`, `api_key_env`, `temperature`,
//!   ... (typed into [`Inference`] here, once; [`Inference::resolve`] gives
//!   the [`InferenceConfig`] the inferencer runs with).
//! - `[trace]`: what run traces keep ([`TraceLimits`]): `arg_bytes`,
//!   `run_bytes`, `file_mb`, `total_mb`. An unknown key is an error.
//! - `[mcp_servers.NAME]`: `transport`, `command`, `args`, `env`, `url`,
//!   `timeout_seconds`, the server's jail (`network`, `workspace`,
//!   `read_paths`, `write_paths`, `memory_mb`, `max_procs`),
//!   `[mcp_servers.NAME.tools.TOOL] grade = {w, d}`; `[mcp] host_configs`.
//!   With `transport = "http"`: `url` (required, http(s)) and `headers`
//!   (values may name `${VAR}`s); the process keys are then errors
//!   ([`remote::check_http`]).
//!
//! Unknown top-level sections and keys are ignored, as the original did;
//! a known key with the wrong type is an error naming file, line and key.

mod inference;
mod kit;
mod provider;
pub mod remote;

pub use inference::{Inference, InferenceConfig, Plugin, ProviderConfig, Secret};

pub use provider::{
    CommandTool, McpTool, Parse, Provider, ProviderError, PythonTool, Seg, Template,
    LEGACY_BUILTINS_MODULE,
};

pub use kit::{parse_kit, render_kit, Kit, KitSource, Kits};
pub use remote::Headers;

use crate::lang::{Grade, Namespace, ToolEntry};
use crate::wire::Limits;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The shipped builtin tools, as TOML data.
pub const DEFAULT_TOOLS_TOML: &str = include_str!("../default_tools.toml");

/// The tools of the default profile (no profile, no tool list, no
/// `[profile] default`): the read-only builtins.
pub const DEFAULT_PROFILE_TOOLS: &[&str] = &["read_file", "find_files"];

/// One argument of a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ArgSpec {
    /// Argument name.
    pub name: String,
    /// Type, as a Python annotation string (`str`, `list[str]`).
    #[serde(default, rename = "type")]
    pub type_name: String,
    /// What it means.
    #[serde(default)]
    pub description: String,
}

/// Metadata of one tool, as in the original lackpy's `ToolSpec`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ToolSpec {
    /// Function name used in programs.
    pub name: String,
    /// Provider that implements it (`builtin`, `python`, `command`, `mcp`, `virtual`).
    pub provider: String,
    /// Provider-specific settings (`module`/`function` for `python`, …), as JSON.
    #[serde(default)]
    pub provider_config: serde_json::Map<String, serde_json::Value>,
    /// Description shown to models and users.
    #[serde(default)]
    pub description: String,
    /// Arguments.
    #[serde(default)]
    pub args: Vec<ArgSpec>,
    /// Return type annotation.
    #[serde(default)]
    pub returns: String,
    /// World coupling 0–3.
    #[serde(default)]
    pub grade_w: u8,
    /// Effects ceiling 0–3.
    #[serde(default)]
    pub effects_ceiling: u8,
    /// Relative path of a markdown doc file.
    #[serde(default)]
    pub docs: Option<String>,
}

impl ToolSpec {
    /// The tool's grade.
    pub fn grade(&self) -> Grade {
        Grade {
            w: self.grade_w,
            d: self.effects_ceiling,
        }
    }

    /// `name(arg: type, ...) -> returns`, for listings and prompts.
    pub fn signature(&self) -> String {
        self.signature_as(&self.name)
    }

    /// [`ToolSpec::signature`] under the name a program uses (an alias).
    pub fn signature_as(&self, alias: &str) -> String {
        let args: Vec<(&str, &str)> = self
            .args
            .iter()
            .map(|a| (a.name.as_str(), a.type_name.as_str()))
            .collect();
        signature(alias, &args, &self.returns)
    }
}

/// The one tool-signature formatter: `name(arg: type, ...) -> returns`,
/// an argument without a type shown bare, no arrow without a return type.
pub fn signature(name: &str, args: &[(&str, &str)], returns: &str) -> String {
    let args: Vec<String> = args
        .iter()
        .map(|(n, t)| {
            if t.is_empty() {
                (*n).to_string()
            } else {
                format!("{n}: {t}")
            }
        })
        .collect();
    let ret = if returns.is_empty() {
        String::new()
    } else {
        format!(" -> {returns}")
    };
    format!("{name}({}){ret}", args.join(", "))
}

/// A profile resolved against the toolbox: what one run may use.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedProfile {
    /// Profile name (`"(default)"`, `"(tools)"` for an ad-hoc list).
    pub name: String,
    /// (alias the program uses, the tool's spec).
    pub tools: Vec<(String, ToolSpec)>,
    /// Limits for runs under this profile.
    pub limits: Limits,
}

impl ResolvedProfile {
    /// The validator's view of this profile.
    pub fn namespace(&self) -> Namespace {
        Namespace {
            tools: self
                .tools
                .iter()
                .map(|(alias, spec)| ToolEntry {
                    name: alias.clone(),
                    target: spec.name.clone(),
                    args: spec.args.iter().map(|a| a.name.clone()).collect(),
                    grade: spec.grade(),
                })
                .collect(),
        }
    }

    /// Join of the grades of all the profile's tools.
    pub fn grade(&self) -> Grade {
        self.tools
            .iter()
            .fold(Grade::default(), |g, (_, s)| g.join(s.grade()))
    }

    /// The spec of the tool a program calls as `alias`.
    pub fn tool(&self, alias: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|(a, _)| a == alias).map(|(_, s)| s)
    }
}

/// What went wrong in a configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    /// The file is not valid TOML, or a key has the wrong type.
    #[error("{0}")]
    Invalid(String),
    /// A profile name that no config table or kit file defines.
    #[error("unknown profile '{name}' (available: {available})")]
    UnknownProfile {
        /// The name asked for.
        name: String,
        /// Comma-separated list of defined profiles.
        available: String,
    },
    /// A tool name that the toolbox does not hold.
    #[error("unknown tool '{name}'{context} (available: {available})")]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// ` in profile 'X'` or empty.
        context: String,
        /// Comma-separated list of toolbox tools.
        available: String,
    },
    /// Reading a file or directory failed.
    #[error("{0}")]
    Io(String),
    /// The workspace directory is unusable.
    #[error("workspace: {0}")]
    Workspace(String),
}

/// A configuration error naming the file, line and key when known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    /// The file the error is in, when there is one.
    pub file: Option<PathBuf>,
    /// 1-based line, when known.
    pub line: Option<u32>,
    /// The offending key (dotted), when known.
    pub key: Option<String>,
    /// What is wrong (boxed to keep `Result<_, ConfigError>` small).
    pub kind: Box<ConfigErrorKind>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}", file.display())?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
            }
            write!(f, ": ")?;
        }
        if let Some(key) = &self.key {
            write!(f, "key `{key}`: ")?;
        }
        write!(f, "{}", self.kind)
    }
}

impl ConfigError {
    /// An error with no file position.
    pub fn new(kind: ConfigErrorKind) -> Self {
        ConfigError {
            file: None,
            line: None,
            key: None,
            kind: Box::new(kind),
        }
    }

    fn at(file: &Path, line: Option<u32>, key: Option<String>, msg: impl Into<String>) -> Self {
        // A key is shown as written: bound it (a hostile file's dotted key
        // can be megabytes long).
        let key = key.map(|k| match k.char_indices().nth(MAX_KEY_SHOWN) {
            Some((i, _)) => format!("{}… ({} bytes)", &k[..i], k.len()),
            None => k,
        });
        ConfigError {
            file: Some(file.to_path_buf()),
            line,
            key,
            kind: Box::new(ConfigErrorKind::Invalid(msg.into())),
        }
    }
}

/// Jail layer names `[sandbox] lower` accepts, in jail order (the same
/// names as `lackpy doctor --lower` and the supervisor's `JailLevel::lowered`).
pub const JAIL_LAYERS: [&str; 4] = ["namespaces", "rlimits", "landlock", "seccomp"];

/// Limit overrides from `[sandbox]` or `[profiles.X.sandbox]`; `None` keeps
/// the value underneath.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LimitOverrides {
    /// `wall_ms`, or `timeout_seconds` × 1000.
    pub wall_ms: Option<u64>,
    /// `fuel`.
    pub fuel: Option<u64>,
    /// `memory_bytes`, or `memory_mb` × 2^20.
    pub memory_bytes: Option<u64>,
    /// `stdout_bytes`.
    pub stdout_bytes: Option<u64>,
    /// `max_tool_calls` or `tool_calls`.
    pub tool_calls: Option<u64>,
    /// `result_bytes`.
    pub result_bytes: Option<u64>,
    /// `source_bytes`.
    pub source_bytes: Option<u64>,
    /// `max_depth`.
    pub max_depth: Option<u32>,
    /// `write_bytes`, or `write_mb` × 2^20.
    pub write_bytes: Option<u64>,
}

impl LimitOverrides {
    /// Apply these overrides to `limits`.
    pub fn apply(&self, limits: &mut Limits) {
        let set = |dst: &mut u64, v: Option<u64>| {
            if let Some(v) = v {
                *dst = v;
            }
        };
        set(&mut limits.wall_ms, self.wall_ms);
        set(&mut limits.fuel, self.fuel);
        set(&mut limits.memory_bytes, self.memory_bytes);
        set(&mut limits.stdout_bytes, self.stdout_bytes);
        set(&mut limits.tool_calls, self.tool_calls);
        set(&mut limits.result_bytes, self.result_bytes);
        set(&mut limits.source_bytes, self.source_bytes);
        set(&mut limits.write_bytes, self.write_bytes);
        if let Some(d) = self.max_depth {
            limits.max_depth = d;
        }
    }

    /// `self` where set, else `under`.
    pub fn or(self, under: LimitOverrides) -> LimitOverrides {
        LimitOverrides {
            wall_ms: self.wall_ms.or(under.wall_ms),
            fuel: self.fuel.or(under.fuel),
            memory_bytes: self.memory_bytes.or(under.memory_bytes),
            stdout_bytes: self.stdout_bytes.or(under.stdout_bytes),
            tool_calls: self.tool_calls.or(under.tool_calls),
            result_bytes: self.result_bytes.or(under.result_bytes),
            source_bytes: self.source_bytes.or(under.source_bytes),
            max_depth: self.max_depth.or(under.max_depth),
            write_bytes: self.write_bytes.or(under.write_bytes),
        }
    }
}

/// How a profile selects its tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolSelection {
    /// A named kit (`.lackpy/kits/NAME.kit`), or `"none"`.
    Kit(String),
    /// Tool names, each its own alias.
    List(Vec<String>),
    /// (alias, tool name) pairs.
    Map(Vec<(String, String)>),
}

/// A `[profiles.NAME]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileDef {
    /// Tool selection (absent `tools` = no base tools).
    pub tools: ToolSelection,
    /// Tools merged in after the selection (duplicates ignored).
    pub extra_tools: Vec<String>,
    /// Description.
    pub description: String,
    /// Relative path of a markdown doc file.
    pub docs: Option<String>,
    /// Limit overrides for this profile.
    pub limits: LimitOverrides,
    /// File and line the table came from.
    pub origin: (PathBuf, Option<u32>),
}

/// One `[mcp_servers.NAME]` table (parsed now, used by the supervisor later).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpServer {
    /// `stdio` (default) or `http`.
    pub transport: String,
    /// Command to start a stdio server.
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment for it.
    pub env: BTreeMap<String, String>,
    /// URL of an http server (`http://` or `https://`, checked at load).
    pub url: Option<String>,
    /// `headers` of an http server: values may hold `${VAR}` references,
    /// expanded from the supervisor's environment when connecting. Never
    /// shown (its `Debug` prints the names only).
    pub headers: Headers,
    /// The host application's config file this server was read from
    /// (`[mcp] host_configs`); `None` for an `[mcp_servers]` table.
    pub origin: Option<PathBuf>,
    /// Per-tool grade overrides.
    pub tool_grades: BTreeMap<String, Grade>,
    /// `network = true`: the server keeps the host's network (default: a
    /// network namespace with no interfaces).
    pub network: bool,
    /// `workspace`: the server's access to the workspace.
    pub workspace: WorkspaceAccess,
    /// `read_paths`: more paths it may read (and execute), as written
    /// (`~/` and workspace-relative paths are resolved by the supervisor).
    pub read_paths: Vec<String>,
    /// `write_paths`: paths it may read and write, as written.
    pub write_paths: Vec<String>,
    /// `memory_mb`: its data (heap) limit, when set.
    pub memory_mb: Option<u64>,
    /// `max_procs`: how many processes it may run, when set.
    pub max_procs: Option<u64>,
    /// `timeout_seconds`: per-call timeout in milliseconds, when set
    /// (positive and finite; kept here so nobody re-reads the file).
    pub timeout_ms: Option<u64>,
    /// `trust_workspace_code = true`: the server may be started by a
    /// launcher that takes code from its working directory, the workspace
    /// (`make`, `npm run`, `uv run`…; see the supervisor's `launchers`),
    /// which is refused otherwise.
    pub trust_workspace_code: bool,
}

/// What an `[mcp_servers]` child may do with the workspace
/// (`workspace = "none" | "read" | "write"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum WorkspaceAccess {
    /// No access at all.
    None,
    /// Read files and list directories (the default).
    #[default]
    Read,
    /// Every filesystem right beneath the workspace.
    Write,
}

/// A parsed configuration file (or the merge of several).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// `[[tools]]`, in file order.
    pub tools: Vec<ToolSpec>,
    /// `[[virtual_tools]]`.
    pub virtual_tools: Vec<ToolSpec>,
    /// `[profiles.NAME]`.
    pub profiles: BTreeMap<String, ProfileDef>,
    /// `[profile] default` (or `[kit] default`).
    pub default_profile: Option<String>,
    /// True when `default_profile` came from the original's `[kit] default`
    /// (informational: a default of either spelling that names nothing
    /// falls back to the read-only builtins, see [`Config::default_names_nothing`]).
    pub default_is_legacy: bool,
    /// `[sandbox]` limit overrides.
    pub sandbox: LimitOverrides,
    /// The raw `[sandbox]` table (merged key by key), for keys other
    /// components own (e.g. a jail level).
    pub sandbox_raw: toml::Table,
    /// `[sandbox] lower`: jail layers the operator lowered (each one of
    /// [`JAIL_LAYERS`], no duplicates); `None` when no file set the key.
    pub sandbox_lower: Option<Vec<String>>,
    /// `[inference]`, typed (as written; [`Inference::resolve`] gives
    /// what the inferencer runs with).
    pub inference: Inference,
    /// `[mcp_servers.NAME]`.
    pub mcp_servers: BTreeMap<String, McpServer>,
    /// `[mcp] host_configs`.
    pub mcp_host_configs: Vec<String>,
    /// The servers read from the `host_configs` files, in the order the
    /// files are listed (filled by the front end, which reads the files;
    /// a name already used by `[mcp_servers]` or an earlier file is left
    /// out there). Their tools come after those of `[mcp_servers]`.
    pub mcp_host_servers: Vec<(String, McpServer)>,
    /// `[trace]`, when a file set it (a workspace table replaces the
    /// user's as a whole; keys it leaves out take the defaults).
    pub trace: Option<TraceLimits>,
    /// Files this config was read from, lowest precedence first.
    pub files: Vec<PathBuf>,
    /// Keys that were accepted but change nothing here (the original
    /// lackpy's, mostly), one line each, prefixed with the file; front
    /// ends print each once.
    pub warnings: Vec<String>,
}

// ---- raw serde shapes -------------------------------------------------

#[derive(Deserialize, Default)]
struct RawConfig {
    #[serde(default)]
    tools: Vec<toml::Spanned<RawTool>>,
    #[serde(default)]
    virtual_tools: Vec<toml::Spanned<RawTool>>,
    #[serde(default)]
    profiles: BTreeMap<String, toml::Spanned<RawProfile>>,
    #[serde(default)]
    profile: Option<RawDefault>,
    #[serde(default)]
    kit: Option<RawDefault>,
    #[serde(default)]
    sandbox: Option<RawSandbox>,
    #[serde(default)]
    inference: Option<inference::RawInference>,
    #[serde(default)]
    mcp_servers: BTreeMap<String, RawMcpServer>,
    #[serde(default)]
    mcp: Option<RawMcp>,
    #[serde(default)]
    trace: Option<toml::Spanned<RawTrace>>,
}

/// `[trace]`: every key optional.
#[derive(Deserialize, Default, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct RawTrace {
    #[serde(default)]
    arg_bytes: Option<u64>,
    #[serde(default)]
    run_bytes: Option<u64>,
    #[serde(default)]
    file_mb: Option<u64>,
    #[serde(default)]
    total_mb: Option<u64>,
}

/// What run traces keep (`[trace]`): bounds on what a program can make
/// lackpy write and hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceLimits {
    /// Bytes of one traced argument's JSON text (or error message) kept
    /// whole; a longer one is kept as this many bytes of prefix, its size
    /// and its SHA-256 (`arg_bytes`, 64 B to 1 MiB, default 1 KiB).
    pub arg_bytes: u64,
    /// Bytes of arguments one run's trace keeps in all; past it, calls keep
    /// only sizes and digests (`run_bytes`, 1 KiB to 64 MiB, default 1 MiB).
    pub run_bytes: u64,
    /// Size at which a trace file is rotated (`file_mb`, 1 to 4096, default 64).
    pub file_bytes: u64,
    /// Size of the whole trace directory above which the oldest files are
    /// removed (`total_mb`, at least `file_mb`, default 512).
    pub total_bytes: u64,
}

impl Default for TraceLimits {
    fn default() -> Self {
        TraceLimits {
            arg_bytes: 1024,
            run_bytes: 1024 * 1024,
            file_bytes: 64 * 1024 * 1024,
            total_bytes: 512 * 1024 * 1024,
        }
    }
}

#[derive(Deserialize)]
struct RawTool {
    name: String,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    provider_config: Option<toml::Table>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    args: Vec<ArgSpec>,
    #[serde(default)]
    returns: String,
    #[serde(default)]
    grade_w: Option<i64>,
    #[serde(default)]
    effects_ceiling: Option<i64>,
    #[serde(default)]
    docs: Option<String>,
    #[serde(flatten)]
    extra: toml::Table,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawAliasTarget {
    Name(String),
    Nested {
        #[serde(default)]
        tool: Option<String>,
    },
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawSelection {
    Kit(String),
    List(Vec<String>),
    Map(BTreeMap<String, RawAliasTarget>),
}

#[derive(Deserialize, Default)]
struct RawProfile {
    #[serde(default)]
    tools: Option<RawSelection>,
    #[serde(default)]
    kit: Option<String>,
    #[serde(default)]
    extra_tools: Vec<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    docs: Option<String>,
    #[serde(default)]
    sandbox: Option<RawProfileSandbox>,
    /// The original's other profile keys (`model`, `mode`, `order`,
    /// `temperature`, `rules`, `language`, `execution`, `policy`) and
    /// anything else: each one is reported by [`profile_key_warnings`].
    #[serde(flatten)]
    extra: BTreeMap<String, toml::Value>,
}

/// A profile's `sandbox`: the original's level string (`"strict"`) or a
/// table of limit overrides.
enum RawProfileSandbox {
    Level(String),
    Limits(Box<RawSandbox>),
}

// By hand rather than `#[serde(untagged)]`: an untagged enum buffers its
// input, which loses the spans `RawSandbox` keeps for error lines.
impl<'de> Deserialize<'de> for RawProfileSandbox {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawProfileSandbox;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sandbox level (\"strict\") or a table of limits")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(RawProfileSandbox::Level(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                m: A,
            ) -> Result<Self::Value, A::Error> {
                RawSandbox::deserialize(serde::de::value::MapAccessDeserializer::new(m))
                    .map(|s| RawProfileSandbox::Limits(Box::new(s)))
            }
        }
        d.deserialize_any(V)
    }
}

/// Profile keys of the original lackpy that select inference or policy
/// settings this runtime does not take from a profile.
const PROFILE_KEYS_WITHOUT_EFFECT: &[&str] =
    &["model", "mode", "order", "temperature", "rules", "policy"];

/// The one-line warnings for a profile's keys that are accepted but change
/// nothing here (the original accepts them; refusing them would break its
/// files, ignoring them silently would mislead).
fn profile_key_warnings(
    name: &str,
    sandbox: Option<&RawProfileSandbox>,
    extra: &BTreeMap<String, toml::Value>,
    out: &mut Vec<String>,
) {
    if let Some(RawProfileSandbox::Level(level)) = sandbox {
        if level != "strict" {
            out.push(format!(
                "profiles.{name}.sandbox = {level:?} has no effect: every run is jailed (namespaces, landlock, seccomp, rlimits)"
            ));
        }
    }
    for (key, value) in extra {
        let text = match value {
            toml::Value::String(s) => format!("{s:?}"),
            other => other.to_string(),
        };
        let why = match key.as_str() {
            "language" if text == "\"restricted-python\"" => continue,
            "execution" if text == "\"one-shot\"" => continue,
            "language" => "the only language here is \"restricted-python\"",
            "execution" => "the only execution model here is \"one-shot\"",
            k if PROFILE_KEYS_WITHOUT_EFFECT.contains(&k) => {
                "per-profile inference and policy settings are not supported here (use [inference])"
            }
            _ => "not a profile key lackpy knows",
        };
        out.push(format!("profiles.{name}.{key} is ignored: {why}"));
    }
}

#[derive(Deserialize, Default)]
struct RawDefault {
    #[serde(default)]
    default: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Number {
    Int(i64),
    Float(f64),
}

#[derive(Deserialize, Default)]
struct RawSandbox {
    #[serde(default)]
    timeout_seconds: Option<Number>,
    #[serde(default)]
    wall_ms: Option<i64>,
    #[serde(default)]
    memory_mb: Option<Number>,
    #[serde(default)]
    memory_bytes: Option<i64>,
    #[serde(default)]
    fuel: Option<i64>,
    #[serde(default)]
    max_tool_calls: Option<i64>,
    #[serde(default)]
    tool_calls: Option<i64>,
    #[serde(default)]
    stdout_bytes: Option<i64>,
    #[serde(default)]
    result_bytes: Option<i64>,
    #[serde(default)]
    source_bytes: Option<i64>,
    #[serde(default)]
    max_depth: Option<i64>,
    #[serde(default)]
    write_mb: Option<Number>,
    #[serde(default)]
    write_bytes: Option<i64>,
    #[serde(default)]
    lower: Option<toml::Spanned<Vec<String>>>,
    /// The original's `enabled` (its sandbox was optional; here every run
    /// is jailed, so the key is reported and otherwise ignored).
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(flatten)]
    extra: BTreeMap<String, toml::Value>,
}

/// Warnings for `[sandbox]` keys (`prefix` = `sandbox` or
/// `profiles.NAME.sandbox`) that are accepted but change nothing.
fn sandbox_key_warnings(prefix: &str, s: &RawSandbox, out: &mut Vec<String>) {
    if s.enabled == Some(false) {
        out.push(format!(
            "{prefix}.enabled = false has no effect: every run is jailed (namespaces, landlock, seccomp, rlimits)"
        ));
    }
    for key in s.extra.keys() {
        out.push(format!(
            "{prefix}.{key} is ignored: not a sandbox key lackpy knows"
        ));
    }
}

#[derive(Deserialize, Default)]
struct RawMcpServer {
    #[serde(default)]
    transport: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    tools: BTreeMap<String, RawMcpTool>,
    #[serde(default)]
    network: Option<bool>,
    #[serde(default)]
    workspace: Option<String>,
    #[serde(default)]
    read_paths: Vec<String>,
    #[serde(default)]
    write_paths: Vec<String>,
    #[serde(default)]
    memory_mb: Option<i64>,
    #[serde(default)]
    max_procs: Option<i64>,
    #[serde(default)]
    timeout_seconds: Option<Number>,
    #[serde(default)]
    trust_workspace_code: Option<bool>,
}

#[derive(Deserialize, Default)]
struct RawMcpTool {
    #[serde(default)]
    grade: Option<RawGrade>,
}

#[derive(Deserialize)]
struct RawGrade {
    w: i64,
    d: i64,
}

#[derive(Deserialize, Default)]
struct RawMcp {
    #[serde(default)]
    host_configs: Vec<String>,
}

// ---- parsing ------------------------------------------------------------

/// 1-based line of byte offset `off` in `text`.
fn line_of(text: &str, off: usize) -> u32 {
    let off = off.min(text.len());
    let n = text.as_bytes()[..off]
        .iter()
        .filter(|b| **b == b'\n')
        .count();
    u32::try_from(n + 1).unwrap_or(u32::MAX)
}

/// The key on the line containing `off` (`key = ...`), if any.
fn key_at(text: &str, off: usize) -> Option<String> {
    let off = off.min(text.len());
    let bytes = text.as_bytes();
    let start = bytes[..off]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let end = bytes[off..]
        .iter()
        .position(|b| *b == b'\n')
        .map_or(text.len(), |i| off + i);
    let line = text.get(start..end)?;
    let (k, _) = line.split_once('=')?;
    let k = k.trim().trim_matches('"');
    if k.is_empty() || k.starts_with('[') || k.contains('{') {
        None
    } else {
        Some(k.to_string())
    }
}

fn toml_to_json(v: &toml::Value) -> serde_json::Value {
    match v {
        toml::Value::String(s) => serde_json::Value::String(s.clone()),
        toml::Value::Integer(i) => serde_json::Value::from(*i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f)
            .map_or(serde_json::Value::Null, serde_json::Value::Number),
        toml::Value::Boolean(b) => serde_json::Value::Bool(*b),
        toml::Value::Datetime(d) => serde_json::Value::String(d.to_string()),
        toml::Value::Array(a) => serde_json::Value::Array(a.iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => serde_json::Value::Object(
            t.iter()
                .map(|(k, v)| (k.clone(), toml_to_json(v)))
                .collect(),
        ),
    }
}

struct Ctx<'a> {
    text: &'a str,
    file: &'a Path,
}

impl Ctx<'_> {
    fn err(
        &self,
        span: Option<std::ops::Range<usize>>,
        key: &str,
        msg: impl Into<String>,
    ) -> ConfigError {
        ConfigError::at(
            self.file,
            span.map(|s| line_of(self.text, s.start)),
            Some(key.to_string()),
            msg,
        )
    }

    fn nonneg(&self, key: &str, v: Option<i64>) -> Result<Option<u64>, ConfigError> {
        match v {
            None => Ok(None),
            Some(v) => u64::try_from(v).map(Some).map_err(|_| {
                self.err(
                    None,
                    key,
                    format!("must be a non-negative integer, got {v}"),
                )
            }),
        }
    }

    fn number(
        &self,
        key: &str,
        v: &Option<Number>,
        scale: f64,
    ) -> Result<Option<u64>, ConfigError> {
        let f = match v {
            None => return Ok(None),
            Some(Number::Int(i)) => *i as f64,
            Some(Number::Float(f)) => *f,
        };
        if !f.is_finite() || f < 0.0 || f * scale > u64::MAX as f64 / 2.0 {
            return Err(self.err(None, key, format!("must be a non-negative number, got {f}")));
        }
        Ok(Some((f * scale).round() as u64))
    }

    fn jail_lower(&self, lower: &toml::Spanned<Vec<String>>) -> Result<Vec<String>, ConfigError> {
        let mut out: Vec<String> = Vec::new();
        for name in lower.get_ref() {
            if !JAIL_LAYERS.contains(&name.as_str()) {
                return Err(self.err(
                    Some(lower.span()),
                    "sandbox.lower",
                    format!(
                        "unknown jail layer {name:?} (known: {})",
                        JAIL_LAYERS.join(", ")
                    ),
                ));
            }
            if !out.contains(name) {
                out.push(name.clone());
            }
        }
        Ok(out)
    }

    /// `[trace]`: each key within its range, unset keys the defaults.
    fn trace(&self, t: &toml::Spanned<RawTrace>) -> Result<TraceLimits, ConfigError> {
        const MB: u64 = 1024 * 1024;
        let span = Some(t.span());
        let raw = *t.get_ref();
        let d = TraceLimits::default();
        let range = |key: &str, v: Option<u64>, lo: u64, hi: u64, unit: u64, def: u64| match v {
            None => Ok(def),
            Some(v) if (lo..=hi).contains(&v) => Ok(v.saturating_mul(unit)),
            Some(v) => Err(self.err(
                span.clone(),
                &format!("trace.{key}"),
                format!("{v} is out of range: {key} is {lo} to {hi}"),
            )),
        };
        let limits = TraceLimits {
            arg_bytes: range("arg_bytes", raw.arg_bytes, 64, MB, 1, d.arg_bytes)?,
            run_bytes: range("run_bytes", raw.run_bytes, 1024, 64 * MB, 1, d.run_bytes)?,
            file_bytes: range("file_mb", raw.file_mb, 1, 4096, MB, d.file_bytes)?,
            total_bytes: range("total_mb", raw.total_mb, 1, 1024 * 1024, MB, d.total_bytes)?,
        };
        if limits.total_bytes < limits.file_bytes {
            return Err(self.err(
                span,
                "trace.total_mb",
                "total_mb must be at least file_mb (one file is never removed while written)",
            ));
        }
        Ok(limits)
    }

    fn sandbox(&self, prefix: &str, s: &RawSandbox) -> Result<LimitOverrides, ConfigError> {
        let k = |name: &str| format!("{prefix}.{name}");
        let wall = match self.number(&k("timeout_seconds"), &s.timeout_seconds, 1000.0)? {
            Some(v) => Some(v),
            None => self.nonneg(&k("wall_ms"), s.wall_ms)?,
        };
        let mem = match self.number(&k("memory_mb"), &s.memory_mb, 1024.0 * 1024.0)? {
            Some(v) => Some(v),
            None => self.nonneg(&k("memory_bytes"), s.memory_bytes)?,
        };
        let calls = match self.nonneg(&k("max_tool_calls"), s.max_tool_calls)? {
            Some(v) => Some(v),
            None => self.nonneg(&k("tool_calls"), s.tool_calls)?,
        };
        let write = match self.number(&k("write_mb"), &s.write_mb, 1024.0 * 1024.0)? {
            Some(v) => Some(v),
            None => self.nonneg(&k("write_bytes"), s.write_bytes)?,
        };
        let depth = match self.nonneg(&k("max_depth"), s.max_depth)? {
            None => None,
            Some(d) => {
                Some(u32::try_from(d).map_err(|_| self.err(None, &k("max_depth"), "too large"))?)
            }
        };
        Ok(LimitOverrides {
            wall_ms: wall,
            fuel: self.nonneg(&k("fuel"), s.fuel)?,
            memory_bytes: mem,
            stdout_bytes: self.nonneg(&k("stdout_bytes"), s.stdout_bytes)?,
            tool_calls: calls,
            result_bytes: self.nonneg(&k("result_bytes"), s.result_bytes)?,
            source_bytes: self.nonneg(&k("source_bytes"), s.source_bytes)?,
            max_depth: depth,
            write_bytes: write,
        })
    }

    fn grade(
        &self,
        span: &std::ops::Range<usize>,
        key: &str,
        v: Option<i64>,
    ) -> Result<u8, ConfigError> {
        match v {
            None => Ok(0),
            Some(g @ 0..=3) => Ok(u8::try_from(g).unwrap_or(3)),
            Some(g) => Err(self.err(
                Some(span.clone()),
                key,
                format!("must be 0, 1, 2 or 3, got {g}"),
            )),
        }
    }

    fn tool(
        &self,
        section: &str,
        raw: toml::Spanned<RawTool>,
        default_provider: &str,
    ) -> Result<ToolSpec, ConfigError> {
        let span = raw.span();
        let t = raw.into_inner();
        let key = |k: &str| format!("{section}.{}.{k}", t.name);
        if t.name.is_empty() {
            return Err(self.err(
                Some(span),
                &format!("{section}.name"),
                "a tool needs a non-empty name",
            ));
        }
        let provider = match t.provider {
            Some(p) if !p.is_empty() => p,
            _ if !default_provider.is_empty() => default_provider.to_string(),
            _ => {
                return Err(self.err(
                    Some(span),
                    &key("provider"),
                    "missing: say which provider implements the tool",
                ))
            }
        };
        let mut provider_config = serde_json::Map::new();
        for (k, v) in t.extra.iter() {
            provider_config.insert(k.clone(), toml_to_json(v));
        }
        if let Some(pc) = &t.provider_config {
            for (k, v) in pc {
                provider_config.insert(k.clone(), toml_to_json(v));
            }
        }
        let spec = ToolSpec {
            grade_w: self.grade(&span, &key("grade_w"), t.grade_w)?,
            effects_ceiling: self.grade(&span, &key("effects_ceiling"), t.effects_ceiling)?,
            name: t.name,
            provider,
            provider_config,
            description: t.description,
            args: t.args,
            returns: t.returns,
            docs: t.docs,
        };
        // Typed and checked now: a misconfigured tool is a config error
        // here, not a failure at its first call.
        if let Err(e) = Provider::of(&spec) {
            let line = self.line_of_key(&span, &e.key);
            return Err(ConfigError::at(
                self.file,
                Some(line),
                Some(format!("{section}.{}.{}", spec.name, e.key)),
                e.message,
            ));
        }
        Ok(spec)
    }

    /// The line, within the table at `span`, where `key` (or the key it
    /// is an item of: `argv` for `argv[2]`, `env` for `env.X`) is set;
    /// else the table's first line.
    fn line_of_key(&self, span: &std::ops::Range<usize>, key: &str) -> u32 {
        let base = key.split(['[', '.']).next().unwrap_or(key);
        let table = self.text.get(span.clone()).unwrap_or("");
        let mut off = 0;
        for line in table.split_inclusive('\n') {
            let t = line.trim_start();
            let rest = t.strip_prefix(base).or_else(|| {
                // `provider_config = { argv = [...] }` on one line.
                t.find(&format!(" {base} "))
                    .map(|i| &t[i + base.len() + 1..])
            });
            if rest.is_some_and(|r| r.trim_start().starts_with('=')) {
                return line_of(self.text, span.start + off);
            }
            off += line.len();
        }
        line_of(self.text, span.start)
    }
}

/// Most TOML items (as [`toml_items`] counts them) in one config file.
/// Why: the TOML parser holds each table, key and value with its spans,
/// ~75-110 bytes of memory per byte of text for small items: 4 MiB of
/// `[tN]` headers or `{},` inline tables took `lackpy run` to 206-295 MiB
/// (redteam-11), at every load and reload; a hand-written config has a few
/// hundred items.
pub const MAX_CONFIG_ITEMS: usize = 65_536;

/// Longest key shown in a config error, in characters.
const MAX_KEY_SHOWN: usize = 200;

/// An upper bound on the TOML items of `text`: every table header, key,
/// dotted-key part, inline table and array element needs one of `[ { = , .`
/// (those inside strings and comments count too, which only over-counts).
pub fn toml_items(text: &str) -> usize {
    text.bytes()
        .filter(|b| matches!(b, b'[' | b'{' | b'=' | b',' | b'.'))
        .count()
}

impl Config {
    /// Parse one config file's text. `file` is used in error messages only.
    ///
    /// # Errors
    /// [`ConfigError`] naming the file, line and key for TOML syntax errors,
    /// wrong types and out-of-range values.
    pub fn parse(text: &str, file: &Path) -> Result<Config, ConfigError> {
        let items = toml_items(text);
        if items > MAX_CONFIG_ITEMS {
            return Err(ConfigError::at(
                file,
                None,
                None,
                format!("the file holds more than {MAX_CONFIG_ITEMS} TOML items (tables, keys, array elements: counted as `[`, `{{`, `=`, `,` and `.` characters; MAX_CONFIG_ITEMS); it was not parsed"),
            ));
        }
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            let span = e.span();
            let line = span.as_ref().map(|s| line_of(text, s.start));
            let key = span.as_ref().and_then(|s| key_at(text, s.start));
            ConfigError::at(file, line, key, e.message().to_string())
        })?;
        let ctx = Ctx { text, file };
        let mut cfg = Config {
            files: vec![file.to_path_buf()],
            ..Config::default()
        };
        for t in raw.tools {
            cfg.tools.push(ctx.tool("tools", t, "")?);
        }
        for t in raw.virtual_tools {
            cfg.virtual_tools
                .push(ctx.tool("virtual_tools", t, "virtual")?);
        }
        for (name, p) in raw.profiles {
            let line = Some(line_of(text, p.span().start));
            let p = p.into_inner();
            let tools = match (p.tools, p.kit) {
                (Some(RawSelection::Kit(k)), _) | (None, Some(k)) => ToolSelection::Kit(k),
                (Some(RawSelection::List(l)), _) => ToolSelection::List(l),
                (Some(RawSelection::Map(m)), _) => ToolSelection::Map(
                    m.into_iter()
                        .map(|(alias, t)| {
                            let target = match t {
                                RawAliasTarget::Name(n) => n,
                                RawAliasTarget::Nested { tool } => {
                                    tool.unwrap_or_else(|| alias.clone())
                                }
                            };
                            (alias, target)
                        })
                        .collect(),
                ),
                (None, None) => ToolSelection::List(Vec::new()),
            };
            profile_key_warnings(&name, p.sandbox.as_ref(), &p.extra, &mut cfg.warnings);
            let limits = match &p.sandbox {
                Some(RawProfileSandbox::Level(_)) | None => LimitOverrides::default(),
                Some(RawProfileSandbox::Limits(s)) => {
                    sandbox_key_warnings(&format!("profiles.{name}.sandbox"), s, &mut cfg.warnings);
                    if let Some(l) = &s.lower {
                        return Err(ctx.err(
                            Some(l.span()),
                            &format!("profiles.{name}.sandbox.lower"),
                            "the jail level is set for the whole process: use the global [sandbox] lower",
                        ));
                    }
                    ctx.sandbox(&format!("profiles.{name}.sandbox"), s)?
                }
            };
            cfg.profiles.insert(
                name,
                ProfileDef {
                    tools,
                    extra_tools: p.extra_tools,
                    description: p.description,
                    docs: p.docs,
                    limits,
                    origin: (file.to_path_buf(), line),
                },
            );
        }
        cfg.default_profile = raw.profile.and_then(|p| p.default);
        if cfg.default_profile.is_none() {
            cfg.default_profile = raw.kit.and_then(|k| k.default);
            cfg.default_is_legacy = cfg.default_profile.is_some();
        }
        if let Some(t) = raw.trace {
            cfg.trace = Some(ctx.trace(&t)?);
        }
        if let Some(s) = &raw.sandbox {
            sandbox_key_warnings("sandbox", s, &mut cfg.warnings);
            cfg.sandbox = ctx.sandbox("sandbox", s)?;
            if let Some(lower) = &s.lower {
                cfg.sandbox_lower = Some(ctx.jail_lower(lower)?);
            }
        }
        if let Some(inf) = raw.inference {
            cfg.inference = ctx.inference(inf, &mut cfg.warnings)?;
        }
        // Keep the raw [sandbox] table for keys other components own.
        if let Ok(doc) = text.parse::<toml::Table>() {
            if let Some(toml::Value::Table(t)) = doc.get("sandbox") {
                cfg.sandbox_raw = t.clone();
            }
        }
        for (name, s) in raw.mcp_servers {
            let mut tool_grades = BTreeMap::new();
            for (tool, t) in s.tools {
                if let Some(g) = t.grade {
                    let key = format!("mcp_servers.{name}.tools.{tool}.grade");
                    let conv = |v: i64| {
                        u8::try_from(v).ok().filter(|v| *v <= 3).ok_or_else(|| {
                            ctx.err(None, &key, format!("grades are 0..=3, got {v}"))
                        })
                    };
                    tool_grades.insert(
                        tool,
                        Grade {
                            w: conv(g.w)?,
                            d: conv(g.d)?,
                        },
                    );
                }
            }
            let workspace = match s.workspace.as_deref() {
                None | Some("read") => WorkspaceAccess::Read,
                Some("none") => WorkspaceAccess::None,
                Some("write") => WorkspaceAccess::Write,
                Some(other) => {
                    return Err(ctx.err(
                        None,
                        &format!("mcp_servers.{name}.workspace"),
                        format!("expected \"none\", \"read\" or \"write\", got {other:?}"),
                    ))
                }
            };
            let positive = |key: &str, v: Option<i64>, max: i64| {
                v.map(|v| {
                    if (1..=max).contains(&v) {
                        Ok(v as u64)
                    } else {
                        Err(ctx.err(
                            None,
                            &format!("mcp_servers.{name}.{key}"),
                            format!("expected 1..={max}, got {v}"),
                        ))
                    }
                })
                .transpose()
            };
            let memory_mb = positive("memory_mb", s.memory_mb, 1 << 20)?;
            let max_procs = positive("max_procs", s.max_procs, 4096)?;
            let timeout_ms = match s.timeout_seconds {
                None => None,
                Some(n) => {
                    let secs = match n {
                        Number::Int(i) => i as f64,
                        Number::Float(f) => f,
                    };
                    if !(secs.is_finite() && secs > 0.0) {
                        return Err(ctx.err(
                            None,
                            &format!("mcp_servers.{name}.timeout_seconds"),
                            format!("expected a positive number of seconds, got {secs}"),
                        ));
                    }
                    Some((secs * 1000.0).min(u64::MAX as f64) as u64)
                }
            };
            for (key, paths) in [
                ("read_paths", &s.read_paths),
                ("write_paths", &s.write_paths),
            ] {
                if let Some(p) = paths.iter().find(|p| p.is_empty() || p.contains('\0')) {
                    return Err(ctx.err(
                        None,
                        &format!("mcp_servers.{name}.{key}"),
                        format!("{p:?} is not a path"),
                    ));
                }
            }
            let transport = s.transport.unwrap_or_else(|| "stdio".to_string());
            let headers = Headers(s.headers);
            if transport == "http" {
                let mut present = Vec::new();
                for (key, set) in [
                    ("command", s.command.is_some()),
                    ("args", !s.args.is_empty()),
                    ("env", !s.env.is_empty()),
                    ("workspace", s.workspace.is_some()),
                    ("read_paths", !s.read_paths.is_empty()),
                    ("write_paths", !s.write_paths.is_empty()),
                    ("network", s.network.is_some()),
                    ("memory_mb", s.memory_mb.is_some()),
                    ("max_procs", s.max_procs.is_some()),
                    ("trust_workspace_code", s.trust_workspace_code.is_some()),
                ] {
                    if set {
                        present.push(key);
                    }
                }
                match remote::check_http(s.url.as_deref(), &headers, &present) {
                    Ok(w) => cfg
                        .warnings
                        .extend(w.into_iter().map(|w| format!("mcp_servers.{name}: {w}"))),
                    Err((key, msg)) => {
                        return Err(ctx.err(None, &format!("mcp_servers.{name}.{key}"), msg))
                    }
                }
            } else if let Some(h) = headers.0.keys().next() {
                return Err(ctx.err(
                    None,
                    &format!("mcp_servers.{name}.headers.{h}"),
                    format!(
                        "`headers` are sent to a remote server: they need transport = \"http\" (this one is {transport:?})"
                    ),
                ));
            } else if transport == "stdio" && s.url.is_some() {
                return Err(ctx.err(
                    None,
                    &format!("mcp_servers.{name}.url"),
                    "`url` names a remote server: add transport = \"http\" (a stdio server is started from `command`)",
                ));
            }
            cfg.mcp_servers.insert(
                name,
                McpServer {
                    transport,
                    command: s.command,
                    args: s.args,
                    env: s.env,
                    url: s.url,
                    headers,
                    origin: None,
                    tool_grades,
                    network: s.network.unwrap_or(false),
                    workspace,
                    read_paths: s.read_paths,
                    write_paths: s.write_paths,
                    memory_mb,
                    max_procs,
                    timeout_ms,
                    trust_workspace_code: s.trust_workspace_code.unwrap_or(false),
                },
            );
        }
        cfg.mcp_host_configs = raw.mcp.map(|m| m.host_configs).unwrap_or_default();
        for w in &mut cfg.warnings {
            *w = format!("{}: {w}", file.display());
        }
        Ok(cfg)
    }

    /// Merge two configs: `over` (the workspace's) wins over `under` (the
    /// user's) key by key: tools and profiles by name, sandbox field by
    /// field, inference providers by name.
    pub fn merge(under: Config, over: Config) -> Config {
        let mut tools = under.tools;
        for t in over.tools {
            match tools.iter_mut().find(|x| x.name == t.name) {
                Some(slot) => *slot = t,
                None => tools.push(t),
            }
        }
        let mut virtual_tools = under.virtual_tools;
        for t in over.virtual_tools {
            match virtual_tools.iter_mut().find(|x| x.name == t.name) {
                Some(slot) => *slot = t,
                None => virtual_tools.push(t),
            }
        }
        let mut profiles = under.profiles;
        profiles.extend(over.profiles);
        let inference = Inference::merge(under.inference, over.inference);
        let mut mcp_servers = under.mcp_servers;
        mcp_servers.extend(over.mcp_servers);
        let mut mcp_host_configs = under.mcp_host_configs;
        mcp_host_configs.extend(over.mcp_host_configs);
        let mut mcp_host_servers = under.mcp_host_servers;
        mcp_host_servers.extend(over.mcp_host_servers);
        let mut files = under.files;
        files.extend(over.files);
        let mut warnings = under.warnings;
        warnings.extend(over.warnings);
        Config {
            tools,
            virtual_tools,
            profiles,
            default_is_legacy: if over.default_profile.is_some() {
                over.default_is_legacy
            } else {
                under.default_is_legacy
            },
            default_profile: over.default_profile.or(under.default_profile),
            sandbox: over.sandbox.or(under.sandbox),
            sandbox_lower: over.sandbox_lower.or(under.sandbox_lower),
            sandbox_raw: {
                let mut t = under.sandbox_raw;
                t.extend(over.sandbox_raw);
                t
            },
            inference,
            mcp_servers,
            mcp_host_configs,
            mcp_host_servers,
            trace: over.trace.or(under.trace),
            files,
            warnings,
        }
    }

    /// The toolbox: the shipped builtins, overridden and extended by this
    /// config's `[[tools]]` and `[[virtual_tools]]`.
    pub fn toolbox(&self) -> Toolbox {
        let mut tb = Toolbox::builtin();
        for t in self.tools.iter().chain(self.virtual_tools.iter()) {
            match tb.tools.iter_mut().find(|x| x.name == t.name) {
                Some(slot) => *slot = t.clone(),
                None => tb.tools.push(t.clone()),
            }
        }
        tb
    }

    /// Names of all profiles: config tables and kit files, sorted, deduplicated.
    pub fn profile_names(&self, kits: &dyn KitSource) -> Vec<String> {
        let mut v: Vec<String> = self.profiles.keys().cloned().collect();
        v.extend(kits.names());
        v.sort();
        v.dedup();
        v
    }

    /// Resolve what a run may use. Precedence: `tools` (an ad-hoc list),
    /// then `profile`, then `[profile] default`, then the read-only
    /// builtins ([`DEFAULT_PROFILE_TOOLS`]). A profile name is looked up in
    /// `[profiles.NAME]`, then in the kit files; `"none"` is the empty kit;
    /// a name containing commas is an ad-hoc tool list (as the original's
    /// `profile info read_file,find_files`).
    ///
    /// # Errors
    /// [`ConfigErrorKind::UnknownProfile`] / [`ConfigErrorKind::UnknownTool`]
    /// listing what is available.
    pub fn resolve(
        &self,
        profile: Option<&str>,
        tools: Option<&[String]>,
        kits: &dyn KitSource,
    ) -> Result<ResolvedProfile, ConfigError> {
        let toolbox = self.toolbox();
        let mut limits = Limits::default();
        self.sandbox.apply(&mut limits);
        // A profile made of these tools under their own names.
        let listed = |name: &str, names: &[&str], limits: Limits| {
            let pairs: Vec<(String, String)> = names
                .iter()
                .map(|t| t.trim())
                .filter(|t| !t.is_empty())
                .map(|t| (t.to_string(), t.to_string()))
                .collect();
            Ok::<_, ConfigError>(ResolvedProfile {
                name: name.to_string(),
                tools: toolbox.select(&pairs, "")?,
                limits,
            })
        };
        if let Some(list) = tools {
            let names: Vec<&str> = list.iter().map(String::as_str).collect();
            return listed("(tools)", &names, limits);
        }
        let legacy_missing = profile.is_none() && self.default_names_nothing(kits);
        let chosen = if legacy_missing {
            None
        } else {
            profile.or(self.default_profile.as_deref())
        };
        let name = match chosen {
            Some(n) => n,
            None => return listed("(default)", DEFAULT_PROFILE_TOOLS, limits),
        };
        let ctx = format!(" in profile '{name}'");
        if let Some(def) = self.profiles.get(name) {
            let mut pairs: Vec<(String, String)> = match &def.tools {
                ToolSelection::List(l) => l.iter().map(|t| (t.clone(), t.clone())).collect(),
                ToolSelection::Map(m) => m.clone(),
                ToolSelection::Kit(k) => self.kit_pairs(k, kits)?,
            };
            for t in &def.extra_tools {
                if !pairs.iter().any(|(a, _)| a == t) {
                    pairs.push((t.clone(), t.clone()));
                }
            }
            let tools = toolbox.select(&pairs, &ctx).map_err(|mut e| {
                e.file = Some(def.origin.0.clone());
                e.line = def.origin.1;
                e.key = Some(format!("profiles.{name}"));
                e
            })?;
            def.limits.apply(&mut limits);
            return Ok(ResolvedProfile {
                name: name.to_string(),
                tools,
                limits,
            });
        }
        if name == "none" || kits.get(name).is_some() {
            let pairs = self.kit_pairs(name, kits)?;
            let tools = toolbox.select(&pairs, &ctx)?;
            return Ok(ResolvedProfile {
                name: name.to_string(),
                tools,
                limits,
            });
        }
        if name.contains(',') {
            let names: Vec<&str> = name.split(',').collect();
            return listed("(tools)", &names, limits);
        }
        let mut available = self.profile_names(kits);
        available.push("none".to_string());
        Err(ConfigError::new(ConfigErrorKind::UnknownProfile {
            name: name.to_string(),
            available: available.join(", "),
        }))
    }

    /// True when `[profile] default` (or `[kit] default`) names a profile
    /// that no table or kit file defines: runs that name no profile then
    /// use the read-only builtins (the original's `lackpyctl init` writes
    /// `default = "debug"` without defining `debug`); front ends say so
    /// with a warning.
    pub fn default_names_nothing(&self, kits: &dyn KitSource) -> bool {
        self.default_profile.as_deref().is_some_and(|d| {
            d != "none"
                && !d.contains(',')
                && !self.profiles.contains_key(d)
                && kits.get(d).is_none()
        })
    }

    fn kit_pairs(
        &self,
        name: &str,
        kits: &dyn KitSource,
    ) -> Result<Vec<(String, String)>, ConfigError> {
        if name == "none" {
            return Ok(Vec::new());
        }
        match kits.get(name) {
            Some(k) => Ok(k.tools.iter().map(|t| (t.clone(), t.clone())).collect()),
            None => {
                let mut available = kits.names();
                available.push("none".to_string());
                Err(ConfigError::new(ConfigErrorKind::UnknownProfile {
                    name: name.to_string(),
                    available: available.join(", "),
                }))
            }
        }
    }
}

/// Where a profile is defined and what it says about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProfileMeta {
    /// `config` (a `[profiles.X]` table), `kit` (a `.kit` file), `builtin`
    /// (`none`, `(default)`) or `tools` (an ad-hoc list).
    pub source: String,
    /// Description.
    pub description: String,
    /// Relative path of the profile's doc file.
    pub docs: Option<String>,
}

/// The documentation references of a resolved profile (the original's
/// `docs_index`): paths relative to the workspace, never loaded here.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DocsIndex {
    /// Tool name (as the program sees it) → doc path.
    pub tool_docs: BTreeMap<String, String>,
    /// Profile-level doc paths.
    pub kit_docs: Vec<String>,
}

impl Config {
    /// Metadata of a profile by name (`None` → the default profile).
    pub fn profile_meta(&self, name: Option<&str>, kits: &dyn KitSource) -> ProfileMeta {
        let name = name.or(self.default_profile.as_deref());
        let Some(name) = name else {
            return ProfileMeta {
                source: "builtin".into(),
                description: "The read-only builtins".into(),
                docs: None,
            };
        };
        if let Some(p) = self.profiles.get(name) {
            return ProfileMeta {
                source: "config".into(),
                description: p.description.clone(),
                docs: p.docs.clone(),
            };
        }
        if let Some(k) = kits.get(name) {
            return ProfileMeta {
                source: "kit".into(),
                description: k.description,
                docs: k.docs,
            };
        }
        if name == "none" {
            return ProfileMeta {
                source: "builtin".into(),
                description: "No tools".into(),
                docs: None,
            };
        }
        ProfileMeta {
            source: "tools".into(),
            description: String::new(),
            docs: None,
        }
    }

    /// The docs index of a profile (arguments as [`Config::resolve`]).
    ///
    /// # Errors
    /// As [`Config::resolve`].
    pub fn docs_index(
        &self,
        profile: Option<&str>,
        tools: Option<&[String]>,
        kits: &dyn KitSource,
    ) -> Result<DocsIndex, ConfigError> {
        let r = self.resolve(profile, tools, kits)?;
        let mut idx = DocsIndex::default();
        for (alias, spec) in &r.tools {
            if let Some(d) = &spec.docs {
                idx.tool_docs.insert(alias.clone(), d.clone());
            }
        }
        if tools.is_none() {
            if let Some(d) = self.profile_meta(profile, kits).docs {
                idx.kit_docs.push(d);
            }
        }
        Ok(idx)
    }
}

/// The registry of every available tool.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Toolbox {
    /// All tools, builtins first.
    pub tools: Vec<ToolSpec>,
}

impl Toolbox {
    /// The shipped builtins only ([`DEFAULT_TOOLS_TOML`]).
    pub fn builtin() -> Toolbox {
        Toolbox {
            tools: builtin_tools(),
        }
    }

    /// Look a tool up by its real name.
    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.name == name)
    }

    fn select(
        &self,
        pairs: &[(String, String)],
        context: &str,
    ) -> Result<Vec<(String, ToolSpec)>, ConfigError> {
        let mut out: Vec<(String, ToolSpec)> = Vec::new();
        for (alias, name) in pairs {
            let Some(spec) = self.get(name) else {
                let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
                return Err(ConfigError::new(ConfigErrorKind::UnknownTool {
                    name: name.clone(),
                    context: context.to_string(),
                    available: names.join(", "),
                }));
            };
            if !out.iter().any(|(a, _)| a == alias) {
                out.push((alias.clone(), spec.clone()));
            }
        }
        Ok(out)
    }
}

/// The shipped builtin tools, parsed from [`DEFAULT_TOOLS_TOML`].
pub fn builtin_tools() -> Vec<ToolSpec> {
    // Parsed once per process: every profile resolution starts from the
    // builtins, and parsing the TOML was most of a `validate` call's cost.
    static BUILTINS: std::sync::OnceLock<Vec<ToolSpec>> = std::sync::OnceLock::new();
    BUILTINS
        .get_or_init(|| {
            // The embedded file is tested to parse; an error here is a build
            // defect, and falling back to no builtins keeps this path panic-free.
            Config::parse(
                DEFAULT_TOOLS_TOML,
                Path::new("<builtin default_tools.toml>"),
            )
            .map(|c| c.tools)
            .unwrap_or_default()
        })
        .clone()
}

#[cfg(test)]
mod tests;
