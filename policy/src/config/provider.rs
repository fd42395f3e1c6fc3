//! A tool's provider, typed: [`Provider::of`] parses and checks the
//! `provider` and `provider_config` of a [`ToolSpec`]. The config loader
//! runs it for every `[[tools]]` and `[[virtual_tools]]` entry, so a
//! misconfigured tool is a [`super::ConfigError`] naming file, line and
//! key; the supervisor's dispatcher runs it again for specs built in code
//! (MCP discovery, embedders) and hands providers the typed settings.

use super::ToolSpec;
use serde_json::Value;

/// The module the original lackpy's shipped `default_tools.toml` names for
/// its builtins (`provider = "python"`): such entries are served by
/// lackpy's own builtins.
pub const LEGACY_BUILTINS_MODULE: &str = "lackpy.sources.builtins";

/// A tool's provider with its settings.
#[derive(Debug, Clone, PartialEq)]
pub enum Provider {
    /// A function the supervisor implements (`provider = "builtin"`, a
    /// `codeintel` entry, or an original-lackpy `lackpy.sources.builtins`
    /// python entry). Whether `function` exists is the supervisor's call.
    Builtin {
        /// The builtin function.
        function: String,
    },
    /// A function of the user's python tool modules.
    Python(PythonTool),
    /// An argv template run in a jail.
    Command(CommandTool),
    /// A tool of an `[mcp_servers]` entry.
    Mcp(McpTool),
    /// Supplied at run time by an embedding host.
    Virtual,
}

/// Settings of a `python` tool (the keys other than `module` and
/// `function` are checked for their types here and read by the provider).
#[derive(Debug, Clone, PartialEq)]
pub struct PythonTool {
    /// Dotted module name.
    pub module: String,
    /// Function name in it.
    pub function: String,
}

/// Settings of an `mcp` tool.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The `[mcp_servers]` name.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
}

/// Settings of a `command` tool.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandTool {
    /// `argv`, each item a template; item 0 is literal.
    pub argv: Vec<Template>,
    /// `stdin`, a template.
    pub stdin: Option<Template>,
    /// `parse`: how stdout becomes the result.
    pub parse: Parse,
    /// `allow_options`: values may start with `-` anywhere.
    pub allow_options: bool,
    /// `ok_status`: exit codes that count as success.
    pub ok_status: Vec<i64>,
    /// `writable`: write access to the workspace (with `effects_ceiling >= 2`).
    pub writable: bool,
    /// `trust_workspace_code`: the command may be a launcher that takes
    /// code from its working directory, the workspace (`make`, `cargo`,
    /// `npm run`…), which is refused otherwise.
    pub trust_workspace_code: bool,
}

/// How a command's stdout becomes its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parse {
    /// The text.
    Text,
    /// A list of its lines.
    Lines,
    /// One JSON value.
    Json,
    /// One JSON value per non-empty line.
    JsonLines,
}

/// A template: `{name}` names a declared argument, `{{`/`}}` are literal
/// braces.
#[derive(Debug, Clone, PartialEq)]
pub struct Template(pub Vec<Seg>);

/// One piece of a [`Template`].
#[derive(Debug, Clone, PartialEq)]
pub enum Seg {
    /// Literal text.
    Lit(String),
    /// The argument at this index of the spec's `args`.
    Arg(usize),
}

impl Template {
    /// The template is exactly one argument (`"{name}"`).
    pub fn whole_arg(&self) -> Option<usize> {
        match self.0.as_slice() {
            [Seg::Arg(i)] => Some(*i),
            _ => None,
        }
    }

    /// The template as written when it has no argument, e.g. `"--"`.
    pub fn literal(&self) -> Option<&str> {
        match self.0.as_slice() {
            [Seg::Lit(l)] => Some(l),
            _ => None,
        }
    }

    /// Parse `t` against the argument names `names`.
    ///
    /// # Errors
    /// An unclosed `{`, a single `}`, or a name that is not an argument.
    pub fn parse(t: &str, names: &[&str]) -> Result<Template, String> {
        let mut out = Vec::new();
        let mut lit = String::new();
        let mut chars = t.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    lit.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    lit.push('}');
                }
                '{' => {
                    let mut name = String::new();
                    loop {
                        match chars.next() {
                            Some('}') => break,
                            Some(ch) => name.push(ch),
                            None => return Err(format!("unclosed '{{' in {t:?}")),
                        }
                    }
                    let Some(i) = names.iter().position(|n| *n == name) else {
                        return Err(format!(
                            "{{{name}}} is not one of its declared args ({})",
                            names.join(", ")
                        ));
                    };
                    if !lit.is_empty() {
                        out.push(Seg::Lit(std::mem::take(&mut lit)));
                    }
                    out.push(Seg::Arg(i));
                }
                '}' => return Err(format!("single '}}' in {t:?} (write '}}}}')")),
                _ => lit.push(c),
            }
        }
        if !lit.is_empty() || out.is_empty() {
            out.push(Seg::Lit(lit));
        }
        Ok(Template(out))
    }
}

/// Why a tool's provider settings are unusable: the `provider_config` key
/// (or `provider`) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderError {
    /// The key at fault.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

fn bad(key: &str, message: impl Into<String>) -> ProviderError {
    ProviderError {
        key: key.to_string(),
        message: message.into(),
    }
}

/// Keys every provider that runs a child reads: their types.
fn check_child_keys(spec: &ToolSpec) -> Result<(), ProviderError> {
    let cfg = &spec.provider_config;
    for k in [
        "timeout",
        "timeout_seconds",
        "max_bytes",
        "memory_mb",
        "max_procs",
    ] {
        if let Some(v) = cfg.get(k) {
            if !v.as_f64().is_some_and(|f| f.is_finite() && f >= 0.0) {
                return Err(bad(k, "must be a non-negative number"));
            }
        }
    }
    if let Some(p) = cfg.get("pass_env") {
        if !p.as_array().is_some_and(|a| a.iter().all(Value::is_string)) {
            return Err(bad("pass_env", "must be a list of variable names"));
        }
    }
    if let Some(v) = cfg.get("env") {
        let Some(map) = v.as_object() else {
            return Err(bad("env", "must be a table of strings"));
        };
        for (k, v) in map {
            let Some(s) = v.as_str() else {
                return Err(bad(&format!("env.{k}"), "must be a string"));
            };
            if k.is_empty() || k.contains('=') || k.contains('\0') || s.contains('\0') {
                return Err(bad(&format!("env.{k}"), "is not a valid variable"));
            }
        }
    }
    for k in [
        "network",
        "writable",
        "allow_options",
        "trust_workspace_code",
    ] {
        if cfg.get(k).is_some_and(|v| !v.is_boolean()) {
            return Err(bad(k, "must be true or false"));
        }
    }
    Ok(())
}

fn string<'a>(spec: &'a ToolSpec, key: &str) -> Result<Option<&'a str>, ProviderError> {
    match spec.provider_config.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_str()
            .map(Some)
            .ok_or_else(|| bad(key, "must be a string")),
    }
}

fn required<'a>(spec: &'a ToolSpec, key: &str) -> Result<&'a str, ProviderError> {
    string(spec, key)?
        .filter(|s| !s.is_empty())
        .ok_or_else(|| bad(key, format!("missing: a {} tool needs it", spec.provider)))
}

impl Provider {
    /// Parse and check the provider of `spec`.
    ///
    /// # Errors
    /// An unknown provider, or a setting of the wrong type or value.
    pub fn of(spec: &ToolSpec) -> Result<Provider, ProviderError> {
        match spec.provider.as_str() {
            "builtin" => Ok(Provider::Builtin {
                function: spec.name.clone(),
            }),
            "codeintel" => Ok(Provider::Builtin {
                function: string(spec, "function")?.unwrap_or(&spec.name).to_string(),
            }),
            "virtual" => Ok(Provider::Virtual),
            "python" if string(spec, "module")? == Some(LEGACY_BUILTINS_MODULE) => {
                Ok(Provider::Builtin {
                    function: string(spec, "function")?.unwrap_or(&spec.name).to_string(),
                })
            }
            "python" => Provider::python(spec),
            "command" => Provider::command(spec),
            "mcp" => Ok(Provider::Mcp(McpTool {
                server: required(spec, "server")?.to_string(),
                tool: string(spec, "tool")?.unwrap_or(&spec.name).to_string(),
            })),
            other => Err(bad(
                "provider",
                format!(
                    "{other:?} is not a provider (builtin, python, command, mcp, virtual, codeintel)"
                ),
            )),
        }
    }

    fn python(spec: &ToolSpec) -> Result<Provider, ProviderError> {
        check_child_keys(spec)?;
        string(spec, "python")?;
        if let Some(p) = spec.provider_config.get("python_path") {
            if !p.as_array().is_some_and(|a| a.iter().all(Value::is_string)) {
                return Err(bad("python_path", "must be a list of directories"));
            }
        }
        match string(spec, "workspace")? {
            None | Some("none" | "read" | "write") => {}
            Some(other) => {
                return Err(bad(
                    "workspace",
                    format!("must be \"none\", \"read\" or \"write\", not {other:?}"),
                ))
            }
        }
        Ok(Provider::Python(PythonTool {
            module: required(spec, "module")?.to_string(),
            function: required(spec, "function")?.to_string(),
        }))
    }

    fn command(spec: &ToolSpec) -> Result<Provider, ProviderError> {
        check_child_keys(spec)?;
        let names: Vec<&str> = spec.args.iter().map(|a| a.name.as_str()).collect();
        let items = spec
            .provider_config
            .get("argv")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
            .ok_or_else(|| bad("argv", "must be a non-empty list of strings"))?;
        let mut argv = Vec::with_capacity(items.len());
        for (k, item) in items.iter().enumerate() {
            let key = format!("argv[{k}]");
            let t = item
                .as_str()
                .ok_or_else(|| bad("argv", "must be a non-empty list of strings"))?;
            let t = Template::parse(t, &names).map_err(|e| bad(&key, e))?;
            if k == 0 && t.literal().is_none_or(str::is_empty) {
                return Err(bad(&key, "the program must be literal (and not empty)"));
            }
            argv.push(t);
        }
        let stdin = match string(spec, "stdin")? {
            None => None,
            Some(t) => Some(Template::parse(t, &names).map_err(|e| bad("stdin", e))?),
        };
        let parse = match string(spec, "parse")?.unwrap_or("text") {
            "text" => Parse::Text,
            "lines" => Parse::Lines,
            "json" => Parse::Json,
            "jsonl" | "json_lines" => Parse::JsonLines,
            other => {
                return Err(bad(
                    "parse",
                    format!("{other:?} is not one of text, lines, json, jsonl"),
                ))
            }
        };
        let ok_status = match spec.provider_config.get("ok_status") {
            None => vec![0],
            Some(v) => v
                .as_array()
                .and_then(|a| a.iter().map(Value::as_i64).collect::<Option<Vec<_>>>())
                .ok_or_else(|| bad("ok_status", "must be a list of integers"))?,
        };
        let flag = |k: &str| spec.provider_config.get(k).and_then(Value::as_bool);
        Ok(Provider::Command(CommandTool {
            argv,
            stdin,
            parse,
            allow_options: flag("allow_options").unwrap_or(false),
            ok_status,
            writable: flag("writable").unwrap_or(false),
            trust_workspace_code: flag("trust_workspace_code").unwrap_or(false),
        }))
    }
}
