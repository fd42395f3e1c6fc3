//! Pieces shared by subcommands: choosing the workspace and profile, loading
//! config from disk, reading the program, rendering errors for humans.
//!
//! Disk layout (compatible with the original lackpy):
//! - workspace config: `<workspace>/.lackpy/config.toml` (optional);
//! - user config: `$LACKPY_CONFIG` if set, else
//!   `$XDG_CONFIG_HOME/lackpy/config.toml`, else
//!   `~/.config/lackpy/config.toml` (optional); the workspace file wins key
//!   by key (see `Config::merge`);
//! - kits: `<workspace>/.lackpy/kits/NAME.profile` or `NAME.kit` (the
//!   original's two spellings; `.profile` wins when both exist).

use lackpy_policy::config::{Config, ConfigError, Kits, ResolvedProfile};
use lackpy_policy::wire::ErrorInfo;
use lackpy_supervisor::providers::Providers;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// `--profile NAME | --tools a,b` and `--workspace DIR`, shared by `run`,
/// `validate` and others.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Select {
    /// Profile to use (a `[profiles.NAME]` table or `.lackpy/kits/NAME.profile|.kit`).
    #[arg(long, conflicts_with = "tools")]
    pub profile: Option<String>,
    /// Ad-hoc tool list instead of a profile, comma-separated (`read_file,find_files`).
    #[arg(long, value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Workspace directory the file tools act in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

/// The arguments `run` and `validate` share: the program, the profile and
/// workspace, and `--json`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ProgramArgs {
    #[command(flatten)]
    pub source: ProgramSource,
    #[command(flatten)]
    pub select: Select,
    /// Print one JSON object instead of human-readable output.
    #[arg(long)]
    pub json: bool,
}

/// Where a program comes from: `FILE|-` or `-c PROGRAM`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ProgramSource {
    /// Program file, or `-` for stdin (the default).
    #[arg(value_name = "FILE|-")]
    file: Option<PathBuf>,
    /// Program text given inline instead of a file.
    #[arg(
        short = 'c',
        long = "code",
        value_name = "PROGRAM",
        conflicts_with = "file"
    )]
    code: Option<String>,
}

impl ProgramSource {
    /// The program's bytes: the inline text, or at most `limit + 1` bytes
    /// of the file or stdin ([`read_program`]).
    ///
    /// # Errors
    /// [`CliError::Usage`] when the file cannot be opened or read.
    pub fn read(&self, limit: u64) -> Result<Vec<u8>, CliError> {
        match &self.code {
            Some(code) => Ok(code.clone().into_bytes()),
            None => read_program(self.file.as_deref(), limit),
        }
    }
}

/// A usage or configuration problem: the command exits with status 3.
#[derive(Debug)]
pub enum CliError {
    /// A config file or profile problem.
    Config(ConfigError),
    /// Bad arguments or an unreadable input file.
    Usage(String),
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Config(e) => write!(f, "config error: {e}"),
            CliError::Usage(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for CliError {}

impl From<ConfigError> for CliError {
    fn from(e: ConfigError) -> Self {
        CliError::Config(e)
    }
}

impl CliError {
    /// The exit status for this error (always 3: usage or configuration).
    pub fn exit_code(&self) -> i32 {
        3
    }

    /// The contract's error object for it: kind `config`, type
    /// `ConfigError` (a config file, profile or tool problem) or
    /// `UsageError` (arguments, workspace, input file), with the config
    /// file's line when known.
    pub fn info(&self) -> ErrorInfo {
        use lackpy_policy::wire::ErrorKind;
        let (ty, line) = match self {
            CliError::Config(e) => ("ConfigError", e.line),
            CliError::Usage(m) if m.starts_with("config error") => ("ConfigError", None),
            CliError::Usage(_) => ("UsageError", None),
        };
        let mut info = ErrorInfo::new(ErrorKind::Config, ty, self.to_string());
        info.line = line;
        info
    }

    /// The one JSON object a `--json` command prints for this error: the
    /// run contract's shape (`ok` false, `error` of kind `config`), plus
    /// `calls`/`errors` so that `validate --json` readers find theirs.
    pub fn json(&self) -> serde_json::Value {
        let e = self.info();
        let mut v = crate::mcp::backend::failed_run(e.clone());
        if let Some(o) = v.as_object_mut() {
            o.insert("calls".into(), serde_json::json!([]));
            o.insert("errors".into(), serde_json::json!([e]));
        }
        v
    }

    /// Report the error: on stderr (always), and as one JSON object on
    /// stdout when `json`. Returns the exit status.
    pub fn report(&self, cmd: &str, json: bool) -> i32 {
        eprintln!("lackpy {cmd}: {}", super::escape::line(&self.to_string()));
        if json {
            println!("{}", self.json());
        }
        self.exit_code()
    }
}

/// Everything a subcommand needs after `--workspace/--profile/--tools`.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The workspace directory, canonicalised.
    pub workspace: PathBuf,
    /// User and workspace config, merged.
    pub config: Config,
    /// The workspace's kits (which profiles grant a tool, for errors).
    pub kits: Kits,
    /// The selected profile, resolved.
    pub profile: ResolvedProfile,
}

/// Largest config or kit file read, in bytes (a config file is hand-written
/// text; anything bigger is a mistake or hostile).
const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

/// Most entries read from `.lackpy/kits/` (a kit directory is hand-made;
/// more is a mistake or hostile).
const MAX_KIT_FILES: usize = 10_000;

/// Most bytes of all `.lackpy/kits/` files together (beyond: a config
/// error naming it). Why: each file is capped at [`MAX_CONFIG_BYTES`], but
/// [`MAX_KIT_FILES`] of them would be 40 GiB to read at every load.
const MAX_KITS_BYTES: usize = 4 * 1024 * 1024;

/// Most tool lines in one kit file (beyond: a config error naming it,
/// counted before the kit is parsed). Why: every line is kept as a tool
/// name, ~28 bytes of allocation per 2-byte line: three 4 MiB kits of
/// `a` lines took `lackpy run 1+1` to 359 MiB (redteam-11); a real kit
/// names a few dozen tools.
const MAX_KIT_TOOLS: usize = 4096;

/// Lines of a kit file that `parse_kit` could keep as tool names (an upper
/// bound: front matter lines count too).
fn kit_lines(text: &str) -> usize {
    text.lines()
        .filter(|l| {
            let s = l.trim();
            !s.is_empty() && !s.starts_with('#')
        })
        .count()
}

/// Read a whole (small) text file, capped at [`MAX_CONFIG_BYTES`].
fn read_capped_text(path: &Path) -> Result<String, CliError> {
    let f = std::fs::File::open(path)
        .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", path.display())))?;
    let mut buf = Vec::new();
    f.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", path.display())))?;
    if buf.len() as u64 > MAX_CONFIG_BYTES {
        return Err(CliError::Usage(format!(
            "{} is larger than {MAX_CONFIG_BYTES} bytes",
            path.display()
        )));
    }
    String::from_utf8(buf).map_err(|_| CliError::Usage(format!("{} is not UTF-8", path.display())))
}

/// The user config file path (which may not exist).
pub fn user_config_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LACKPY_CONFIG").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    if let Some(x) = std::env::var_os("XDG_CONFIG_HOME").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(x).join("lackpy").join("config.toml"));
    }
    std::env::var_os("HOME").filter(|p| !p.is_empty()).map(|h| {
        PathBuf::from(h)
            .join(".config")
            .join("lackpy")
            .join("config.toml")
    })
}

/// A workspace given as `arg`, or the current directory; it must be a
/// directory (the long-running front ends, `mcp` and `serve`, keep it as
/// given).
///
/// # Errors
/// [`CliError::Usage`] when it is not a directory (or there is no current
/// directory).
pub fn server_workspace(arg: Option<&Path>) -> Result<PathBuf, CliError> {
    let ws = match arg {
        Some(w) => w.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|e| CliError::Usage(format!("no current directory: {e}")))?,
    };
    if !ws.is_dir() {
        return Err(CliError::Usage(format!(
            "workspace {} is not a directory",
            ws.display()
        )));
    }
    Ok(ws)
}

/// The workspace directory: `--workspace` or the current directory; it must
/// exist. Canonical.
///
/// # Errors
/// [`CliError::Usage`] when it is not a directory.
pub fn workspace_dir(select: &Select) -> Result<PathBuf, CliError> {
    let ws = server_workspace(select.workspace.as_deref())?;
    ws.canonicalize()
        .map_err(|e| CliError::Usage(format!("workspace {}: {e}", ws.display())))
}

/// Start `config`'s `[mcp_servers]` in `workspace` with `providers` (the
/// supervisor's that will run their tools) and add their tools to
/// `config.tools` (from the workspace's tool-list cache when the server is
/// unchanged; else the server is started and asked). Returns one line per
/// MCP tool left out because another tool has its name (for `lackpy tools`
/// and `doctor`). Loading ([`load_files`]) starts nothing.
pub fn start_mcp_servers(
    config: &mut Config,
    workspace: &Path,
    providers: &Providers,
) -> Vec<String> {
    register_server_writes(config, workspace);
    providers.mcp().start(config, workspace)
}

/// Register what write-mode servers can write as program-writable: no
/// trusted code (a server, command or module) may come from there.
fn register_server_writes(config: &Config, workspace: &Path) {
    lackpy_supervisor::trusted::register_write_paths(
        workspace,
        lackpy_supervisor::providers::mcp::write_paths_of(config, workspace),
    );
}

/// For the commands that list tools and profiles: the workspace directory
/// (`workspace`, else the current one), its config and kits, its MCP
/// servers' tools added (with providers of their own; from the tool-list
/// cache when it is fresh), and one line per MCP tool left out because
/// another tool has its name.
///
/// # Errors
/// As [`workspace_dir`] and [`load_files`].
pub fn load_for_listing(
    workspace: Option<PathBuf>,
) -> Result<(PathBuf, Config, Kits, Vec<String>), CliError> {
    let select = Select {
        profile: None,
        tools: None,
        workspace,
    };
    let ws = workspace_dir(&select)?;
    let (mut config, kits) = load_files(&ws)?;
    let clashes = start_mcp_servers(&mut config, &ws, &Providers::new());
    Ok((ws, config, kits, clashes))
}

/// What [`load_files`] read, for a cheap "did anything change?" check:
/// (path, (mtime, size, inode)) of the user config, the workspace config,
/// the kits directory and each file in it (`None` = absent).
pub type ConfigStamp = Vec<(PathBuf, Option<(std::time::SystemTime, u64, u64)>)>;

/// The current [`ConfigStamp`] of `workspace`'s config files (a few
/// `stat` calls; no file is read).
pub fn config_stamp(workspace: &Path) -> ConfigStamp {
    use std::os::unix::fs::MetadataExt;
    // `symlink_metadata`: a symlink is stamped as itself (the loader refuses it).
    let stat = |p: &Path| {
        std::fs::symlink_metadata(p).ok().map(|m| {
            (
                m.modified().unwrap_or(std::time::UNIX_EPOCH),
                m.len(),
                m.ino(),
            )
        })
    };
    let mut out = Vec::new();
    if let Some(user) = user_config_path() {
        let s = stat(&user);
        out.push((user, s));
    }
    let dot = workspace.join(".lackpy");
    let dot_stat = stat(&dot);
    out.push((dot.clone(), dot_stat));
    // No `.lackpy`: nothing below it to stat (one call instead of four).
    if dot_stat.is_none() {
        return out;
    }
    let kits = dot.join("kits");
    let kits_stat = stat(&kits);
    let config = dot.join("config.toml");
    out.push((config.clone(), stat(&config)));
    out.push((kits.clone(), kits_stat));
    if kits_stat.is_none() {
        return out;
    }
    if let Ok(rd) = std::fs::read_dir(&kits) {
        let mut paths: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths {
            let s = stat(&p);
            out.push((p, s));
        }
    }
    out
}

/// The jail level `config`'s `[sandbox] lower` asks for (full when unset).
///
/// # Errors
/// An unknown layer name (the config parser already rejects these).
pub fn jail_level(config: &Config) -> Result<lackpy_supervisor::JailLevel, CliError> {
    let names: &[String] = config.sandbox_lower.as_deref().unwrap_or(&[]);
    lackpy_supervisor::JailLevel::lowered(names).map_err(|e| {
        let file = config
            .files
            .last()
            .map(|f| f.display().to_string())
            .unwrap_or_default();
        CliError::Usage(format!("config error: {file}: sandbox.lower: {e}"))
    })
}

/// Load the user config, the workspace config and the kit files; no
/// `[mcp_servers]` entry is started (see [`start_mcp_servers`]).
///
/// # Errors
/// A config or kit file cannot be read or parsed.
pub fn load_files(workspace: &Path) -> Result<(Config, Kits), CliError> {
    let mut config = Config::default();
    let user_explicit = std::env::var_os("LACKPY_CONFIG").is_some_and(|p| !p.is_empty());
    if let Some(user) = user_config_path() {
        // A user config inside the workspace (the workspace is the home
        // directory, or LACKPY_CONFIG names a file in it) is one a program
        // could write with `write_file`: the next run would load the tools
        // and limits it chose. Refused, like a host config there (an absent
        // one has nothing to trust yet; once a program creates it, it is
        // refused).
        let ws = workspace
            .canonicalize()
            .unwrap_or_else(|_| workspace.to_path_buf());
        let present = std::fs::symlink_metadata(&user).is_ok();
        if present && lackpy_supervisor::trusted::in_writable_set(&user, &ws) {
            return Err(CliError::Usage(format!(
                "config error: the user config {} lies in the workspace {} (or is reached through a symlink there), \
                 which programs can write: lackpy never trusts configuration from it. Use a workspace that does not \
                 hold it, or set LACKPY_CONFIG to a file outside the workspace",
                user.display(),
                ws.display()
            )));
        }
        if user.is_file() {
            config = Config::parse(&read_capped_text(&user)?, &user)?;
        } else if user_explicit {
            return Err(CliError::Usage(format!(
                "LACKPY_CONFIG names {}, which is not a file",
                user.display()
            )));
        }
    }
    // The workspace's control directory is opened beneath the workspace
    // and nothing in it is followed through a symlink: a symlinked
    // `.lackpy`, `config.toml`, `kits/` or kit file is refused (a program
    // that can write the workspace could have planted it).
    let control = |e: lackpy_beneath::Error| CliError::Usage(format!("config error: {e}"));
    let mut kits = Kits::default();
    let Some(ctl) = lackpy_beneath::open_control(workspace, false).map_err(control)? else {
        read_host_configs(&mut config, workspace)?;
        return Ok((config, kits));
    };
    if let Some(text) = ctl
        .read_text("config.toml", MAX_CONFIG_BYTES)
        .map_err(control)?
    {
        let ws_file = ctl.path().join("config.toml");
        let ws = Config::parse(&text, &ws_file)?;
        config = Config::merge(config, ws);
    }
    if let Some(kit_dir) = ctl.subdir("kits", false).map_err(control)? {
        let mut entries = kit_dir.entries(MAX_KIT_FILES).map_err(control)?;
        let mut kits_bytes = 0usize;
        // `.kit` files first, so that a `.profile` of the same name (the
        // original's preferred spelling) replaces it.
        entries.sort_by_key(|(name, _)| name.ends_with(".profile"));
        for (name, kind) in entries {
            let Some(stem) = name
                .strip_suffix(".profile")
                .or_else(|| name.strip_suffix(".kit"))
                .filter(|s| !s.is_empty())
            else {
                continue;
            };
            match kind {
                lackpy_beneath::Kind::File => {}
                lackpy_beneath::Kind::Symlink => {
                    return Err(control(lackpy_beneath::Error::Symlink {
                        path: kit_dir.path().join(&name),
                    }))
                }
                _ => continue,
            }
            if let Some(text) = kit_dir
                .read_text(&name, MAX_CONFIG_BYTES)
                .map_err(control)?
            {
                kits_bytes = kits_bytes.saturating_add(text.len());
                if kits_bytes > MAX_KITS_BYTES {
                    return Err(CliError::Usage(format!(
                        "config error: the kit files of {} hold more than {MAX_KITS_BYTES} bytes together (MAX_KITS_BYTES; at {name})",
                        kit_dir.path().display()
                    )));
                }
                if kit_lines(&text) > MAX_KIT_TOOLS {
                    return Err(CliError::Usage(format!(
                        "config error: {} lists more than {MAX_KIT_TOOLS} tools (MAX_KIT_TOOLS)",
                        kit_dir.path().join(&name).display()
                    )));
                }
                kits.insert_text(stem, &text);
            }
        }
    }
    read_host_configs(&mut config, workspace)?;
    // Bounded: a config file is capped in size, not in keys.
    const MAX_WARNINGS: usize = 50;
    for w in config.warnings.iter().take(MAX_WARNINGS) {
        warn_once(w);
    }
    if config.warnings.len() > MAX_WARNINGS {
        warn_once(&format!(
            "... and {} more ignored config keys",
            config.warnings.len() - MAX_WARNINGS
        ));
    }
    Ok((config, kits))
}

/// Read the servers of `[mcp] host_configs` into `config` (warnings
/// printed once; a host config file programs can write is a config error).
fn read_host_configs(config: &mut Config, workspace: &Path) -> Result<(), CliError> {
    if config.mcp_host_configs.is_empty() {
        return Ok(());
    }
    let warnings = lackpy_supervisor::providers::host_configs::load(config, workspace)
        .map_err(CliError::Usage)?;
    for w in warnings.iter().take(50) {
        warn_once(w);
    }
    Ok(())
}

/// Print `lackpy: warning: MSG` on stderr, once per process per message
/// (escaped for the terminal: it quotes config text).
pub fn warn_once(msg: &str) {
    use std::sync::Mutex;
    static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if seen.iter().any(|s| s == msg) {
        return;
    }
    seen.push(msg.to_string());
    eprintln!("lackpy: warning: {}", super::escape::line(msg));
}

/// Find the workspace, load config and kits, start the MCP servers with
/// `providers` (the ones the supervisor that runs the program will own,
/// see [`lackpy_supervisor::Supervisor::with_providers`]), resolve the
/// selected profile.
///
/// # Errors
/// [`CliError`] (exit 3) for a missing workspace, unreadable or bad config,
/// or an unknown profile or tool.
pub fn load(select: &Select, providers: &Providers) -> Result<Loaded, CliError> {
    let workspace = workspace_dir(select)?;
    // MCP servers' tools are looked up only when the selection names a
    // tool the config and builtins do not have: a run, validation or
    // delegation that uses no server's tool never starts (or reads the
    // cache of) any server.
    let (mut config, kits) = load_files(&workspace)?;
    register_server_writes(&config, &workspace);
    if select.profile.is_none() && select.tools.is_none() && config.default_names_nothing(&kits) {
        warn_once(&format!(
            "the default profile {:?} ([profile] default) is not defined: using the read-only builtins (read_file, find_files)",
            config.default_profile.as_deref().unwrap_or_default()
        ));
    }
    let resolve = |c: &Config| c.resolve(select.profile.as_deref(), select.tools.as_deref(), &kits);
    let profile = match resolve(&config) {
        Ok(p) => p,
        // The write paths are registered above: start the servers only.
        Err(_) if lackpy_supervisor::providers::mcp::has_servers(&config) => {
            let _ = providers.mcp().start(&mut config, &workspace);
            match resolve(&config) {
                Ok(p) => p,
                // A remote server whose header names an unset variable
                // is a configuration error, not a missing tool.
                Err(e) => {
                    let bad = lackpy_supervisor::providers::mcp::header_errors(&config);
                    match bad.into_iter().next() {
                        Some(msg) => return Err(CliError::Usage(msg)),
                        None => return Err(e.into()),
                    }
                }
            }
        }
        Err(e) => return Err(e.into()),
    };
    Ok(Loaded {
        workspace,
        config,
        kits,
        profile,
    })
}

/// The name an `UnknownName` validation error is about (`'NAME' is not ...`).
fn unknown_name(e: &ErrorInfo) -> Option<&str> {
    if e.type_name != "UnknownName" {
        return None;
    }
    e.message.strip_prefix('\'')?.split('\'').next()
}

/// When an `UnknownName` error names a tool of the toolbox that the
/// selected profile does not grant, say which profiles grant it or how to
/// add it with `--tools` (instead of a guess at close names). MCP servers
/// are looked up (cache first) only here, on the error path.
pub fn explain_unknown_tools(errors: &mut [ErrorInfo], loaded: &mut Loaded) {
    if !errors.iter().any(|e| unknown_name(e).is_some()) {
        return;
    }
    let known = |c: &Config, n: &str| c.toolbox().get(n).is_some();
    let needs_servers = lackpy_supervisor::providers::mcp::has_servers(&loaded.config)
        && errors
            .iter()
            .filter_map(unknown_name)
            .any(|n| !known(&loaded.config, n));
    if needs_servers && !loaded.config.tools.iter().any(|t| t.provider == "mcp") {
        let _ = start_mcp_servers(&mut loaded.config, &loaded.workspace, &Providers::new());
    }
    let grants = super::tools::grants(&loaded.config, &loaded.kits);
    for e in errors.iter_mut() {
        let Some(name) = unknown_name(e).map(str::to_string) else {
            continue;
        };
        if !known(&loaded.config, &name) {
            continue;
        }
        let granted: Vec<&String> = grants
            .get(&name)
            .map(|v| v.iter().filter(|p| p.as_str() != "(default)").collect())
            .unwrap_or_default();
        let mut current: Vec<String> = loaded
            .profile
            .tools
            .iter()
            .map(|(a, _)| a.clone())
            .collect();
        current.push(name.clone());
        let via_tools = format!("--tools {}", current.join(","));
        let how = if granted.is_empty() {
            format!("no profile grants it; add it with {via_tools}")
        } else {
            let list: Vec<&str> = granted.iter().map(|s| s.as_str()).collect();
            format!(
                "profile{} {} grant{} it (--profile {}), or use {via_tools}",
                if list.len() == 1 { "" } else { "s" },
                list.join(", "),
                if list.len() == 1 { "s" } else { "" },
                list[0]
            )
        };
        let available = e
            .hint
            .as_deref()
            .and_then(|h| h.find("available tools:").map(|i| h[i..].to_string()));
        let selection = match loaded.profile.name.as_str() {
            "(default)" => "the default selection".to_string(),
            "(tools)" => "the --tools list".to_string(),
            p => format!("profile {p}"),
        };
        let mut hint = format!("{name} is a tool that {selection} does not grant: {how}");
        if let Some(a) = available {
            hint.push_str("; ");
            hint.push_str(&a);
        }
        e.hint = Some(hint);
    }
}

/// Read the program: from `file`, or stdin when `file` is `None` or `-`.
/// Reads at most `limit + 1` bytes, so an oversized input is never slurped
/// whole but still reaches the validator, which reports `SourceTooLarge`.
///
/// # Errors
/// [`CliError::Usage`] when the file cannot be opened or read.
pub fn read_program(file: Option<&Path>, limit: u64) -> Result<Vec<u8>, CliError> {
    let cap = limit.saturating_add(1);
    let mut buf = Vec::new();
    match file {
        None => read_into(std::io::stdin().lock(), cap, &mut buf, "stdin")?,
        Some(p) if p == Path::new("-") => {
            read_into(std::io::stdin().lock(), cap, &mut buf, "stdin")?
        }
        Some(p) => {
            if p.is_dir() {
                return Err(CliError::Usage(format!("{} is a directory", p.display())));
            }
            let f = std::fs::File::open(p)
                .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", p.display())))?;
            read_into(f, cap, &mut buf, &p.display().to_string())?;
        }
    }
    Ok(buf)
}

fn read_into(r: impl Read, cap: u64, buf: &mut Vec<u8>, what: &str) -> Result<(), CliError> {
    r.take(cap)
        .read_to_end(buf)
        .map(|_| ())
        .map_err(|e| CliError::Usage(format!("cannot read {what}: {e}")))
}

/// Render an error for a terminal: `line:col: Type: message`, the source
/// line with a caret under the column, and `hint: ...`. Every piece taken
/// from the error or the source is escaped ([`super::escape`]); the newlines
/// between the pieces are the only ones in the result.
pub fn render_error(source: &str, e: &ErrorInfo) -> String {
    use super::escape;
    let mut out = String::new();
    match (e.line, e.col) {
        (Some(l), Some(c)) => out.push_str(&format!("{l}:{c}: ")),
        (Some(l), None) => out.push_str(&format!("{l}: ")),
        _ => {}
    }
    // The type, message and hint come from the worker, a tool or a provider:
    // each is one line, escaped for the terminal.
    out.push_str(&format!(
        "{}: {}\n",
        escape::line(&e.type_name),
        escape::line(&e.message)
    ));
    if let Some(l) = e.line {
        if let Some(text) = source.lines().nth((l as usize).saturating_sub(1)) {
            // A short excerpt, escaped like the rest (tabs kept for the caret).
            let cut: String = text.chars().take(200).collect();
            let shown: String = cut
                .chars()
                .map(|ch| {
                    let mut b = [0u8; 4];
                    match ch {
                        '\t' => "\t".to_string(),
                        _ => escape::line(ch.encode_utf8(&mut b)).into_owned(),
                    }
                })
                .collect();
            out.push_str(&format!("    {shown}\n"));
            if let Some(c) = e.col {
                let pad: String = cut
                    .chars()
                    .take((c as usize).saturating_sub(1))
                    .flat_map(|ch| {
                        let (fill, n) = if ch == '\t' {
                            ('\t', 1)
                        } else {
                            (' ', escape::escaped_width(ch))
                        };
                        std::iter::repeat_n(fill, n)
                    })
                    .collect();
                out.push_str(&format!("    {pad}^\n"));
            }
        }
    }
    if let Some(h) = &e.hint {
        out.push_str(&format!("hint: {}\n", escape::line(h)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use lackpy_policy::wire::ErrorKind;

    fn ws() -> tempfile::TempDir {
        tempfile::tempdir().expect("tempdir")
    }

    /// A workspace with `files` (paths relative to it) written.
    fn ws_with(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = ws();
        for (path, text) in files {
            let p = d.path().join(path);
            if let Some(dir) = p.parent() {
                std::fs::create_dir_all(dir).expect("mkdir");
            }
            std::fs::write(p, text).expect("write");
        }
        d
    }

    #[test]
    fn load_reads_workspace_config_and_kits() {
        let d = ws_with(&[
            (
                ".lackpy/config.toml",
                "[profiles.rw]\ntools = [\"read_file\", \"write_file\"]\n[sandbox]\ntimeout_seconds = 3\n",
            ),
            (".lackpy/kits/fs.kit", "---\nname: fs\n---\nfind_files\n"),
        ]);
        let sel = |p: Option<&str>| Select {
            profile: p.map(str::to_string),
            tools: None,
            workspace: Some(d.path().to_path_buf()),
        };
        let l = load(&sel(Some("rw")), &Providers::new()).expect("load");
        assert_eq!(l.profile.tools.len(), 2);
        assert_eq!(l.profile.limits.wall_ms, 3000);
        let l = load(&sel(Some("fs")), &Providers::new()).expect("kit");
        assert_eq!(l.profile.tools[0].0, "find_files");
        let l = load(&sel(None), &Providers::new()).expect("default");
        assert_eq!(l.profile.name, "(default)");
        let e = load(&sel(Some("nope")), &Providers::new()).expect_err("unknown");
        assert_eq!(e.exit_code(), 3);
        assert!(e.to_string().contains("unknown profile 'nope'"));
    }

    #[test]
    fn bad_workspace_and_bad_config() {
        let e = load(
            &Select {
                workspace: Some(PathBuf::from("/nonexistent/x")),
                ..Select::default()
            },
            &Providers::new(),
        )
        .expect_err("missing");
        assert!(e.to_string().contains("not a directory"));
        let d = ws_with(&[(".lackpy/config.toml", "[sandbox]\nmemory_mb = \"x\"\n")]);
        let e = load(
            &Select {
                workspace: Some(d.path().to_path_buf()),
                ..Select::default()
            },
            &Providers::new(),
        )
        .expect_err("bad");
        let s = e.to_string();
        assert!(s.contains("config.toml:2"), "{s}");
    }

    #[test]
    fn read_program_caps() {
        let d = ws();
        let p = d.path().join("big.py");
        std::fs::write(&p, vec![b'x'; 5000]).expect("write");
        assert_eq!(read_program(Some(&p), 100).expect("read").len(), 101);
        assert!(read_program(Some(&d.path().join("missing.py")), 100).is_err());
        assert!(read_program(Some(d.path()), 100).is_err());
    }

    #[test]
    fn render_escapes_every_piece_and_keeps_the_caret_aligned() {
        let message = "line one\nfake: line\r\u{9b}31m\u{202e}";
        let e = ErrorInfo::new(ErrorKind::Tool, "Bad\u{1b}[2J", message)
            .at(1, 4)
            .with_hint("\u{2066}hint\u{2069}");
        let r = render_error("\u{1b}\tx(\u{202e})\n", &e);
        assert_eq!(
            r,
            "1:4: Bad\\x1b[2J: line one\\x0afake: line\\x0d\\x9b31m\\u202e\n    \\x1b\tx(\\u202e)\n        \t ^\nhint: \\u2066hint\\u2069\n"
        );
    }

    #[test]
    fn render_has_caret_and_hint() {
        let e = ErrorInfo::new(
            ErrorKind::Validation,
            "ForbiddenName",
            "'open' is not available",
        )
        .at(2, 5)
        .with_hint("use read_file(path)");
        let r = render_error("x = 1\ny = open('a')\n", &e);
        assert_eq!(
            r,
            "2:5: ForbiddenName: 'open' is not available\n    y = open('a')\n        ^\nhint: use read_file(path)\n"
        );
    }
}
