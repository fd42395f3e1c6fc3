//! The `[inference]` section of `.lackpy/config.toml`: provider order and
//! `[inference.providers.NAME]` tables, compatible with the original lackpy.
//!
//! ```toml
//! [inference]
//! order = ["templates", "rules", "local", "big"]
//! promote_after = 3
//!
//! [inference.providers.local]
//! plugin = "ollama"            # ollama | openai | anthropic | woollama
//! host = "http://localhost:11434"
//! model = "qwen2.5-coder:3b"
//!
//! [inference.providers.big]
//! plugin = "woollama"
//! model = "ollama/qwen2.5-coder:7b"
//! ```
//!
//! Pure: the caller reads the file; API keys are looked up through a
//! caller-supplied environment function so tests never touch the real one.

use crate::http::{Endpoint, Secret, Wire};
use std::collections::BTreeMap;
use std::time::Duration;

/// Default Ollama endpoint.
pub const DEFAULT_OLLAMA_URL: &str = "http://localhost:11434";
/// Default Ollama model.
pub const DEFAULT_OLLAMA_MODEL: &str = "qwen2.5-coder:3b";
/// Default OpenAI-compatible endpoint.
pub const DEFAULT_OPENAI_URL: &str = "https://api.openai.com";
/// Default Anthropic endpoint.
pub const DEFAULT_ANTHROPIC_URL: &str = "https://api.anthropic.com";

/// A configuration problem in `[inference]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A key has the wrong type or an unusable value.
    #[error("[inference{table}] {key}: {message}")]
    Bad {
        /// `""` for `[inference]`, `.providers.NAME` for a provider table.
        table: String,
        /// The offending key.
        key: String,
        /// What is wrong.
        message: String,
    },
}

fn bad(table: &str, key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Bad {
        table: table.to_string(),
        key: key.to_string(),
        message: message.into(),
    }
}

/// Which implementation a provider uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plugin {
    /// Intent patterns with slots (shipped plus `.lackpy/templates.toml`).
    Templates,
    /// Keyword rules.
    Rules,
    /// Ollama's native API.
    Ollama,
    /// An OpenAI-compatible `/v1/chat/completions` endpoint.
    OpenAi,
    /// Anthropic's `/v1/messages`.
    Anthropic,
    /// `"provider/model"` strings routed to the matching wire format.
    Woollama,
    /// A plugin this build does not implement (kept so an existing config
    /// still loads; every attempt with it fails with a clear error).
    Unsupported,
}

impl Plugin {
    /// Parse a `plugin = "..."` value.
    pub fn parse(s: &str) -> Option<Plugin> {
        Some(match s {
            "templates" | "template" => Plugin::Templates,
            "rules" => Plugin::Rules,
            "ollama" => Plugin::Ollama,
            "openai" | "openai-compatible" => Plugin::OpenAi,
            "anthropic" => Plugin::Anthropic,
            "woollama" => Plugin::Woollama,
            _ => return None,
        })
    }

    /// True for providers that call a model over HTTP.
    pub fn is_model(self) -> bool {
        !matches!(self, Plugin::Templates | Plugin::Rules)
    }
}

/// One `[inference.providers.NAME]` table (or a built-in default).
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    /// The name used in `order` and reported in `attempts`.
    pub name: String,
    /// Implementation.
    pub plugin: Plugin,
    /// Model name (for woollama, `"provider/model"`).
    pub model: Option<String>,
    /// Base URL (`base_url` or `host`).
    pub base_url: Option<String>,
    /// The `plugin` value as written (for [`Plugin::Unsupported`] errors).
    pub plugin_name: String,
    /// Environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// An API key written in the config file (`api_key`); the environment
    /// variable wins when both are set. Never logged.
    pub api_key: Option<Secret>,
    /// Ollama API: `"generate"` or `"chat"` (default `generate`; woollama uses chat).
    pub api: Option<String>,
    /// Ask for a streamed answer (NDJSON for Ollama, SSE otherwise).
    pub stream: bool,
    /// Sampling temperature of the first attempt. Default 0.2.
    pub temperature: f64,
    /// Temperature of the correction retry. Default 0.6.
    pub retry_temperature: f64,
    /// Maximum tokens to generate. Default 1024.
    pub max_tokens: u32,
    /// TCP connect timeout. Default 3 s.
    pub connect_timeout: Duration,
    /// Whole-request timeout (connect + answer). Default 60 s (a 3B model on a laptop CPU answers in 3–10 s; loading it cold takes longer).
    pub timeout: Duration,
    /// Retries after a 5xx, 429, timeout or connection failure. Default 1. Worst case per provider: 2 attempts × (retries + 1) × timeout.
    pub retries: u32,
    /// Largest response body accepted, in bytes. Default 1 MiB.
    pub max_response_bytes: u64,
    /// Sampling seed sent to the endpoint (Ollama `options.seed`, OpenAI
    /// `seed`), for reproducible answers. Default none.
    pub seed: Option<u64>,
    /// Put a bounded view of the workspace (matching paths, an outline,
    /// data files' first lines) into the prompt. Default: on for an
    /// endpoint on a loopback address, off otherwise (it discloses file
    /// names and the start of data files to the endpoint).
    pub workspace_context: Option<bool>,
}

impl ProviderConfig {
    /// A provider with every setting at its default.
    pub fn new(name: impl Into<String>, plugin: Plugin) -> Self {
        ProviderConfig {
            name: name.into(),
            plugin,
            model: None,
            base_url: None,
            plugin_name: String::new(),
            api_key_env: None,
            api_key: None,
            api: None,
            stream: false,
            temperature: 0.2,
            retry_temperature: 0.6,
            max_tokens: 1024,
            connect_timeout: Duration::from_secs(3),
            timeout: Duration::from_secs(60),
            retries: 1,
            max_response_bytes: 1024 * 1024,
            seed: None,
            workspace_context: None,
        }
    }

    /// Whether the workspace view goes into this provider's prompts:
    /// `workspace_context` when set, else true only for an endpoint whose
    /// host is a loopback name or address.
    pub fn context_enabled(&self, endpoint: &Endpoint) -> bool {
        self.workspace_context
            .unwrap_or_else(|| is_loopback_url(&endpoint.url))
    }

    /// Resolve into a concrete HTTP endpoint (`None` for templates/rules).
    ///
    /// `env` looks up environment variables (the API key).
    ///
    /// # Errors
    /// A woollama model string with an unknown provider prefix, or a missing
    /// API key for a provider that needs one.
    pub fn endpoint(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Endpoint>, ConfigError> {
        let table = format!(".providers.{}", self.name);
        let (plugin, model) = match self.plugin {
            Plugin::Templates | Plugin::Rules => return Ok(None),
            Plugin::Unsupported => {
                return Err(bad(
                    &table,
                    "plugin",
                    format!(
                        "plugin {:?} is not supported by this build (known: templates, rules, ollama, openai, anthropic, woollama)",
                        self.plugin_name
                    ),
                ))
            }
            Plugin::Woollama => {
                let full = self
                    .model
                    .clone()
                    .unwrap_or_else(|| format!("ollama/{DEFAULT_OLLAMA_MODEL}"));
                let Some((prefix, rest)) = full.split_once('/') else {
                    return Err(bad(
                        &table,
                        "model",
                        format!(
                            "woollama model {full:?} must look like \"ollama/qwen2.5-coder:3b\""
                        ),
                    ));
                };
                let plugin = match prefix {
                    "ollama" => Plugin::Ollama,
                    "openai" => Plugin::OpenAi,
                    "anthropic" => Plugin::Anthropic,
                    other => {
                        return Err(bad(&table, "model", format!("unknown woollama provider {other:?} (known: ollama, openai, anthropic)")))
                    }
                };
                if rest.is_empty() {
                    return Err(bad(
                        &table,
                        "model",
                        "empty model name after the provider prefix",
                    ));
                }
                (plugin, rest.to_string())
            }
            p => (p, self.model.clone().unwrap_or_default()),
        };
        let (wire, default_url, default_key_env) = match plugin {
            Plugin::Ollama => {
                let chat = match self.api.as_deref() {
                    Some("chat") => true,
                    Some("generate") => false,
                    None => self.plugin == Plugin::Woollama,
                    Some(other) => {
                        return Err(bad(
                            &table,
                            "api",
                            format!("{other:?} is not \"generate\" or \"chat\""),
                        ))
                    }
                };
                (
                    if chat {
                        Wire::OllamaChat
                    } else {
                        Wire::OllamaGenerate
                    },
                    DEFAULT_OLLAMA_URL,
                    None,
                )
            }
            Plugin::OpenAi => (Wire::OpenAi, DEFAULT_OPENAI_URL, Some("OPENAI_API_KEY")),
            _ => (
                Wire::Anthropic,
                DEFAULT_ANTHROPIC_URL,
                Some("ANTHROPIC_API_KEY"),
            ),
        };
        let model = if model.is_empty() {
            match plugin {
                Plugin::Ollama => DEFAULT_OLLAMA_MODEL.to_string(),
                _ => {
                    return Err(bad(
                        &table,
                        "model",
                        "a model name is required for this provider",
                    ))
                }
            }
        } else {
            model
        };
        // The endpoint's own variables, when the config names no URL:
        // OLLAMA_HOST (Ollama's, may be "host:port"), OPENAI_BASE_URL,
        // ANTHROPIC_BASE_URL.
        let from_env = match plugin {
            Plugin::Ollama => env("OLLAMA_HOST").and_then(|h| ollama_host_url(&h)),
            Plugin::OpenAi => env("OPENAI_BASE_URL").filter(|u| !u.trim().is_empty()),
            _ => env("ANTHROPIC_BASE_URL").filter(|u| !u.trim().is_empty()),
        };
        let base = self
            .base_url
            .clone()
            .or(from_env)
            .map(|u| u.trim().trim_end_matches('/').to_string())
            .unwrap_or_else(|| default_url.to_string());
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(bad(
                &table,
                "base_url",
                format!("{base:?} is not an http:// or https:// URL"),
            ));
        }
        let key_env = self.api_key_env.as_deref().or(default_key_env);
        let api_key = key_env
            .and_then(env)
            .filter(|k| !k.is_empty())
            .map(Secret::new)
            .or_else(|| self.api_key.clone());
        if api_key.is_none() && matches!(plugin, Plugin::Anthropic) {
            return Err(bad(
                &table,
                "api_key_env",
                format!(
                    "the API key variable {} is not set",
                    key_env.unwrap_or("ANTHROPIC_API_KEY")
                ),
            ));
        }
        Ok(Some(Endpoint {
            wire,
            url: wire.url(&base),
            model,
            api_key,
            stream: self.stream,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            connect_timeout_ms: duration_ms(self.connect_timeout),
            timeout_ms: duration_ms(self.timeout),
            retries: self.retries,
            max_response_bytes: self.max_response_bytes,
            pinned_addr: None,
            seed: self.seed,
        }))
    }
}

/// `OLLAMA_HOST` as a base URL: Ollama accepts `host`, `host:port` and
/// full URLs there (port 11434 when absent; `0.0.0.0`, a listen address,
/// means this machine).
pub fn ollama_host_url(v: &str) -> Option<String> {
    let v = v.trim().trim_end_matches('/');
    if v.is_empty() {
        return None;
    }
    let (scheme, rest) = match v.split_once("://") {
        Some((s, r)) => (s.to_string(), r.to_string()),
        None => ("http".to_string(), v.to_string()),
    };
    let (hostport, path) = match rest.find('/') {
        Some(i) => (rest[..i].to_string(), rest[i..].to_string()),
        None => (rest, String::new()),
    };
    let has_port = if hostport.starts_with('[') {
        hostport.contains("]:")
    } else {
        hostport.contains(':')
    };
    let mut hostport = if has_port {
        hostport
    } else {
        format!("{hostport}:11434")
    };
    if let Some(port) = hostport.strip_prefix("0.0.0.0:") {
        hostport = format!("127.0.0.1:{port}");
    }
    Some(format!("{scheme}://{hostport}{path}"))
}

/// True when the URL's host is `localhost`, a `127.x` address or `::1`.
pub fn is_loopback_url(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let hostport = rest.split(['/', '?', '#']).next().unwrap_or("");
    let hostport = hostport.rsplit_once('@').map_or(hostport, |(_, h)| h);
    let host = if let Some(h) = hostport.strip_prefix('[') {
        h.split(']').next().unwrap_or("")
    } else {
        hostport.split(':').next().unwrap_or("")
    };
    let host = host.to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|a| a.is_loopback())
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The whole `[inference]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct InferenceConfig {
    /// Providers in the order they are tried.
    pub order: Vec<ProviderConfig>,
    /// Successes of the same normalised intent before it becomes a template. Default 3.
    pub promote_after: u32,
    /// Examples retrieved into a prompt. Default 6.
    pub examples: usize,
    /// Count a delegate result that ran ok towards promotion without the
    /// caller's confirmation (`promote_unconfirmed = true`). Default false:
    /// only results confirmed over MCP (`confirm_result`) count.
    pub promote_unconfirmed: bool,
}

impl Default for InferenceConfig {
    fn default() -> Self {
        InferenceConfig {
            order: vec![
                ProviderConfig::new("templates", Plugin::Templates),
                ProviderConfig::new("rules", Plugin::Rules),
                ProviderConfig::new("ollama", Plugin::Ollama),
            ],
            promote_after: 3,
            examples: 6,
            promote_unconfirmed: false,
        }
    }
}

impl InferenceConfig {
    /// Read `[inference]` from a parsed config file (the whole document).
    /// A document without the section gives the defaults.
    ///
    /// # Errors
    /// [`ConfigError`] naming the table and key.
    pub fn from_toml(doc: &toml::Value) -> Result<Self, ConfigError> {
        let mut cfg = InferenceConfig::default();
        let Some(inf) = doc.get("inference") else {
            return Ok(cfg);
        };
        let Some(inf) = inf.as_table() else {
            return Err(bad("", "inference", "must be a table"));
        };
        let mut providers: BTreeMap<String, ProviderConfig> = BTreeMap::new();
        if let Some(p) = inf.get("providers") {
            let Some(p) = p.as_table() else {
                return Err(bad("", "providers", "must be a table"));
            };
            for (name, t) in p {
                providers.insert(name.clone(), parse_provider(name, t)?);
            }
        }
        if let Some(v) = inf.get("promote_after") {
            cfg.promote_after = int(v)
                .and_then(|i| u32::try_from(i).ok())
                .ok_or_else(|| bad("", "promote_after", "must be a non-negative integer"))?;
        }
        if let Some(v) = inf.get("promote_unconfirmed") {
            cfg.promote_unconfirmed = v
                .as_bool()
                .ok_or_else(|| bad("", "promote_unconfirmed", "must be true or false"))?;
        }
        if let Some(v) = inf.get("examples") {
            cfg.examples = int(v)
                .and_then(|i| usize::try_from(i).ok())
                .filter(|n| *n <= 50)
                .ok_or_else(|| bad("", "examples", "must be an integer 0..=50"))?;
        }
        let order: Vec<String> = match inf.get("order") {
            Some(v) => {
                let Some(a) = v.as_array() else {
                    return Err(bad("", "order", "must be an array of provider names"));
                };
                a.iter()
                    .map(|x| {
                        x.as_str()
                            .map(str::to_string)
                            .ok_or_else(|| bad("", "order", "must be an array of strings"))
                    })
                    .collect::<Result<_, _>>()?
            }
            None if providers.is_empty() => return Ok(cfg),
            None => {
                let mut o = vec!["templates".to_string(), "rules".to_string()];
                o.extend(
                    providers
                        .keys()
                        .filter(|k| *k != "templates" && *k != "rules")
                        .cloned(),
                );
                o
            }
        };
        cfg.order = order
            .iter()
            .map(|name| match providers.get(name) {
                Some(p) => Ok(p.clone()),
                None => match Plugin::parse(name) {
                    Some(plugin) => Ok(ProviderConfig::new(name.clone(), plugin)),
                    None => Err(bad("", "order", format!("{name:?} is neither a built-in provider nor an [inference.providers.{name}] table"))),
                },
            })
            .collect::<Result<_, _>>()?;
        Ok(cfg)
    }

    /// Apply the `--model` / `--ollama-url` flags.
    ///
    /// `--model M` replaces every model provider with one built from `M`
    /// (`"ollama/x"`, `"openai/x"`, `"anthropic/x"` route by prefix; a bare
    /// name is an Ollama model); templates and rules stay. `--ollama-url U`
    /// sets the base URL of every Ollama-wire provider.
    pub fn apply_flags(&mut self, model: Option<&str>, ollama_url: Option<&str>) {
        if let Some(m) = model {
            let mut p = if m.contains('/') {
                ProviderConfig::new(m, Plugin::Woollama)
            } else {
                ProviderConfig::new(format!("ollama/{m}"), Plugin::Ollama)
            };
            p.model = Some(m.to_string());
            // Keep the first model provider's settings (timeouts, stream, url).
            if let Some(first) = self.order.iter().find(|p| p.plugin.is_model()) {
                p.stream = first.stream;
                p.timeout = first.timeout;
                p.connect_timeout = first.connect_timeout;
                p.retries = first.retries;
                if first.plugin == Plugin::Ollama && p.plugin == Plugin::Ollama {
                    p.base_url = first.base_url.clone();
                    p.api = first.api.clone();
                }
            }
            self.order.retain(|p| !p.plugin.is_model());
            self.order.push(p);
        }
        if let Some(u) = ollama_url {
            for p in &mut self.order {
                let ollama_wire = p.plugin == Plugin::Ollama
                    || (p.plugin == Plugin::Woollama
                        && p.model.as_deref().is_none_or(|m| m.starts_with("ollama/")));
                if ollama_wire {
                    p.base_url = Some(u.to_string());
                }
            }
        }
    }
}

fn int(v: &toml::Value) -> Option<i64> {
    v.as_integer()
}

fn secs(table: &str, key: &str, v: &toml::Value) -> Result<Duration, ConfigError> {
    let f = v.as_float().or_else(|| v.as_integer().map(|i| i as f64));
    match f {
        Some(f) if f.is_finite() && f > 0.0 && f <= 3600.0 => Ok(Duration::from_secs_f64(f)),
        _ => Err(bad(table, key, "must be a number of seconds in (0, 3600]")),
    }
}

fn parse_provider(name: &str, v: &toml::Value) -> Result<ProviderConfig, ConfigError> {
    let table = format!(".providers.{name}");
    let Some(t) = v.as_table() else {
        return Err(bad("", &format!("providers.{name}"), "must be a table"));
    };
    let plugin_name = match t.get("plugin") {
        Some(p) => p
            .as_str()
            .ok_or_else(|| bad(&table, "plugin", "must be a string"))?
            .to_string(),
        None => name.to_string(),
    };
    let plugin = Plugin::parse(&plugin_name).unwrap_or(Plugin::Unsupported);
    let mut p = ProviderConfig::new(name, plugin);
    p.plugin_name = plugin_name;
    let s = |key: &str| -> Result<Option<String>, ConfigError> {
        match t.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_str()
                .map(|x| Some(x.to_string()))
                .ok_or_else(|| bad(&table, key, "must be a string")),
        }
    };
    p.model = s("model")?;
    p.base_url = s("base_url")?
        .or(s("host")?)
        .map(|u| u.trim_end_matches('/').to_string());
    p.api_key_env = s("api_key_env")?;
    p.api = s("api")?;
    if let Some(v) = t.get("stream") {
        p.stream = v
            .as_bool()
            .ok_or_else(|| bad(&table, "stream", "must be true or false"))?;
    }
    for (key, slot) in [
        ("temperature", &mut p.temperature),
        ("retry_temperature", &mut p.retry_temperature),
    ] {
        if let Some(v) = t.get(key) {
            let f = v.as_float().or_else(|| v.as_integer().map(|i| i as f64));
            *slot = f
                .filter(|f| (0.0..=2.0).contains(f))
                .ok_or_else(|| bad(&table, key, "must be a number in [0, 2]"))?;
        }
    }
    if let Some(v) = t.get("max_tokens") {
        p.max_tokens = int(v)
            .and_then(|i| u32::try_from(i).ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| bad(&table, "max_tokens", "must be a positive integer"))?;
    }
    if let Some(v) = t.get("timeout_seconds").or(t.get("timeout")) {
        p.timeout = secs(&table, "timeout_seconds", v)?;
    }
    if let Some(v) = t.get("connect_timeout_seconds") {
        p.connect_timeout = secs(&table, "connect_timeout_seconds", v)?;
    }
    if let Some(v) = t.get("retries") {
        p.retries = int(v)
            .and_then(|i| u32::try_from(i).ok())
            .filter(|n| *n <= 10)
            .ok_or_else(|| bad(&table, "retries", "must be an integer 0..=10"))?;
    }
    if let Some(v) = t.get("max_response_bytes") {
        p.max_response_bytes = int(v)
            .and_then(|i| u64::try_from(i).ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| bad(&table, "max_response_bytes", "must be a positive integer"))?;
    }
    if let Some(v) = t.get("seed") {
        p.seed = Some(
            int(v)
                .and_then(|i| u64::try_from(i).ok())
                .ok_or_else(|| bad(&table, "seed", "must be a non-negative integer"))?,
        );
    }
    if let Some(v) = t.get("workspace_context") {
        p.workspace_context = Some(
            v.as_bool()
                .ok_or_else(|| bad(&table, "workspace_context", "must be true or false"))?,
        );
    }
    p.api_key = s("api_key")?.filter(|k| !k.is_empty()).map(Secret::new);
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<InferenceConfig, ConfigError> {
        InferenceConfig::from_toml(
            &toml::from_str::<toml::Value>(s).map_err(|e| bad("", "toml", e.to_string()))?,
        )
    }

    #[test]
    fn defaults_without_section() {
        let c = parse("").unwrap_or_default();
        assert_eq!(
            c.order.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            ["templates", "rules", "ollama"]
        );
        let ep = c.order[2].endpoint(&|_| None).ok().flatten();
        let ep = ep.map(|e| (e.url, e.model));
        assert_eq!(
            ep,
            Some((
                "http://localhost:11434/api/generate".to_string(),
                "qwen2.5-coder:3b".to_string()
            ))
        );
    }

    #[test]
    fn providers_and_order() {
        let c = parse(
            r#"
[inference]
order = ["templates", "small", "big", "api"]
[inference.providers.small]
plugin = "ollama"
host = "http://127.0.0.1:9/"
model = "qwen2.5-coder:3b"
api = "chat"
stream = true
timeout_seconds = 0.5
[inference.providers.big]
plugin = "woollama"
model = "openai/gpt-x"
base_url = "http://127.0.0.1:8/v1"
[inference.providers.api]
plugin = "anthropic"
model = "claude-haiku"
api_key_env = "MY_KEY"
"#,
        );
        let c = match c {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(c.order.len(), 4);
        let env = |k: &str| (k == "MY_KEY").then(|| "sekrit".to_string());
        let small = c.order[1].endpoint(&env).ok().flatten();
        assert!(
            matches!(&small, Some(e) if e.wire == Wire::OllamaChat && e.url == "http://127.0.0.1:9/api/chat" && e.stream && e.timeout_ms == 500)
        );
        let big = c.order[2].endpoint(&env).ok().flatten();
        assert!(
            matches!(&big, Some(e) if e.wire == Wire::OpenAi && e.url == "http://127.0.0.1:8/v1/chat/completions" && e.model == "gpt-x")
        );
        let api = c.order[3].endpoint(&env).ok().flatten();
        assert!(
            matches!(&api, Some(e) if e.wire == Wire::Anthropic && e.api_key.as_ref().map(|k| k.expose()) == Some("sekrit"))
        );
        // Debug never shows the key.
        assert!(!format!("{api:?}").contains("sekrit"));
        assert!(c.order[3].endpoint(&|_| None).is_err());
    }

    #[test]
    fn bad_config_names_key() {
        let e = parse("[inference]\norder = [\"nope\"]")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("order") && e.contains("nope"), "{e}");
        let e = parse("[inference.providers.x]\nplugin = \"ollama\"\ntimeout_seconds = -1")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("timeout_seconds"), "{e}");
        let e = parse("[inference.providers.x]\nplugin = \"woollama\"\nmodel = \"zzz/m\"")
            .ok()
            .and_then(|c| c.order.last().map(|p| p.endpoint(&|_| None)));
        assert!(matches!(e, Some(Err(_))));
        // A key in the file is accepted (the original allows it) and never shown.
        let c = parse(
            "[inference.providers.x]\nplugin = \"openai\"\nmodel = \"m\"\napi_key = \"sk-file\"",
        )
        .ok();
        let ep = c.and_then(|c| {
            c.order
                .last()
                .and_then(|p| p.endpoint(&|_| None).ok().flatten())
        });
        assert_eq!(
            ep.as_ref()
                .and_then(|e| e.api_key.as_ref())
                .map(|k| k.expose()),
            Some("sk-file")
        );
        assert!(!format!("{ep:?}").contains("sk-file"));
    }

    #[test]
    fn unknown_plugin_loads_but_fails_when_used() {
        let c = parse(
            "[inference]\norder = [\"odd\"]\n[inference.providers.odd]\nplugin = \"claude-code\"\n",
        );
        let c = match c {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(c.order[0].plugin, Plugin::Unsupported);
        let e = c.order[0]
            .endpoint(&|_| None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("\"claude-code\" is not supported"), "{e}");
    }

    #[test]
    fn flags_override() {
        let mut c = InferenceConfig::default();
        c.apply_flags(Some("anthropic/claude-x"), Some("http://127.0.0.1:1"));
        assert_eq!(c.order.len(), 3);
        assert_eq!(c.order[2].plugin, Plugin::Woollama);
        let mut c = InferenceConfig::default();
        c.apply_flags(Some("qwen2.5-coder:7b"), Some("http://127.0.0.1:1"));
        let ep = c.order[2]
            .endpoint(&|_| None)
            .ok()
            .flatten()
            .map(|e| (e.url, e.model));
        assert_eq!(
            ep,
            Some((
                "http://127.0.0.1:1/api/generate".into(),
                "qwen2.5-coder:7b".into()
            ))
        );
    }

    #[test]
    fn endpoint_variables_and_v1_bases() {
        let env = |k: &str| match k {
            "OLLAMA_HOST" => Some("0.0.0.0:11500".to_string()),
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:8088/v1".to_string()),
            "ANTHROPIC_BASE_URL" => Some("https://proxy.example/anthropic".to_string()),
            "ANTHROPIC_API_KEY" => Some("k".to_string()),
            _ => None,
        };
        let url = |p: ProviderConfig| {
            p.endpoint(&env)
                .ok()
                .flatten()
                .map(|e| e.url)
                .unwrap_or_default()
        };
        assert_eq!(
            url(ProviderConfig::new("o", Plugin::Ollama)),
            "http://127.0.0.1:11500/api/generate"
        );
        let mut oa = ProviderConfig::new("a", Plugin::OpenAi);
        oa.model = Some("m".into());
        assert_eq!(url(oa), "http://127.0.0.1:8088/v1/chat/completions");
        let mut an = ProviderConfig::new("b", Plugin::Anthropic);
        an.model = Some("m".into());
        assert_eq!(url(an), "https://proxy.example/anthropic/v1/messages");
        // The config's own base_url wins over the variable.
        let mut o = ProviderConfig::new("o", Plugin::Ollama);
        o.base_url = Some("http://h:1".into());
        assert_eq!(url(o), "http://h:1/api/generate");
        // woollama "ollama/..." with an OpenAI-style base ending in /v1.
        let mut w = ProviderConfig::new("w", Plugin::Woollama);
        w.model = Some("ollama/qwen".into());
        w.base_url = Some("http://localhost:11434/v1".into());
        assert_eq!(url(w), "http://localhost:11434/api/chat");
        assert_eq!(
            ollama_host_url("example.org").as_deref(),
            Some("http://example.org:11434")
        );
        assert_eq!(
            ollama_host_url("https://h:5/x/").as_deref(),
            Some("https://h:5/x")
        );
        assert_eq!(
            ollama_host_url("[::1]").as_deref(),
            Some("http://[::1]:11434")
        );
        assert_eq!(ollama_host_url(" "), None);
    }

    #[test]
    fn workspace_context_defaults_by_locality() {
        for (u, local) in [
            ("http://localhost:11434/api/generate", true),
            ("http://127.0.0.1:8088/v1/chat/completions", true),
            ("http://[::1]:1/x", true),
            ("https://api.openai.com/v1/chat/completions", false),
            ("http://localhost.evil.com/x", false),
            ("http://user@127.0.0.1:1/", true),
        ] {
            assert_eq!(is_loopback_url(u), local, "{u}");
        }
        let c = parse("[inference.providers.x]\nplugin = \"openai\"\nmodel = \"m\"\nworkspace_context = true\nseed = 7\n")
            .unwrap_or_default();
        let p = c.order.iter().find(|p| p.name == "x").cloned();
        let p = p.unwrap_or_else(|| ProviderConfig::new("none", Plugin::Rules));
        assert_eq!((p.workspace_context, p.seed), (Some(true), Some(7)));
        assert!(parse("[inference.providers.x]\nworkspace_context = 1\n").is_err());
    }
}
