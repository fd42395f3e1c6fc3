//! `[inference]`: the provider order and `[inference.providers.NAME]`
//! tables, typed here once (with file, line and key in every error) into
//! the types the inferencer uses ([`InferenceConfig`], [`ProviderConfig`]).
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
//! A file's section is kept as written ([`Inference`]: unset keys stay
//! unset) so that a workspace file overrides a user file key by key and
//! provider by provider; [`Inference::resolve`] then gives the
//! [`InferenceConfig`] (defaults filled in, `order` resolved to providers).

use super::{line_of, ConfigError, Ctx};
use bincode::{Decode, Encode};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use toml::{Spanned, Value};

/// A secret string (an API key) whose `Debug` never shows it.
#[derive(Clone, PartialEq, Eq, Encode, Decode)]
pub struct Secret(String);

impl Secret {
    /// Wrap a secret.
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    /// The secret itself, for the request header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
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
}

/// The `[inference]` section resolved: what the inferencer runs with.
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

/// One file's `[inference]` as written: unset keys stay `None`, so a
/// workspace file overrides a user file key by key ([`Inference::merge`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Inference {
    /// `order`: provider names in priority order (empty = not set).
    pub order: Vec<String>,
    /// Where `order` was written (file, line), for errors found when the
    /// merged section is resolved.
    pub order_origin: Option<(PathBuf, Option<u32>)>,
    /// The original's `mode` key (accepted, no effect).
    pub mode: Option<String>,
    /// `promote_after`.
    pub promote_after: Option<u32>,
    /// `promote_unconfirmed`.
    pub promote_unconfirmed: Option<bool>,
    /// `examples`.
    pub examples: Option<usize>,
    /// `[inference.providers.NAME]`, typed.
    pub providers: BTreeMap<String, ProviderConfig>,
}

impl Inference {
    /// `over` (the workspace's) wins over `under` key by key; providers
    /// by name (a provider table replaces another as a whole).
    pub fn merge(under: Inference, over: Inference) -> Inference {
        let mut providers = under.providers;
        providers.extend(over.providers);
        let (order, order_origin) = if over.order.is_empty() {
            (under.order, under.order_origin)
        } else {
            (over.order, over.order_origin)
        };
        Inference {
            order,
            order_origin,
            mode: over.mode.or(under.mode),
            promote_after: over.promote_after.or(under.promote_after),
            promote_unconfirmed: over.promote_unconfirmed.or(under.promote_unconfirmed),
            examples: over.examples.or(under.examples),
            providers,
        }
    }

    /// The section with defaults filled in and `order` resolved: each name
    /// is a provider table or a built-in plugin (`templates`, `rules`,
    /// `ollama`, ...). Without `order`, templates and rules come first,
    /// then every provider table; without any table, the defaults
    /// (templates, rules, Ollama on localhost).
    ///
    /// # Errors
    /// An `order` name that is neither, at the file and line of `order`.
    pub fn resolve(&self) -> Result<InferenceConfig, ConfigError> {
        let mut cfg = InferenceConfig::default();
        if let Some(n) = self.promote_after {
            cfg.promote_after = n;
        }
        if let Some(b) = self.promote_unconfirmed {
            cfg.promote_unconfirmed = b;
        }
        if let Some(n) = self.examples {
            cfg.examples = n;
        }
        if self.order.is_empty() && self.providers.is_empty() {
            return Ok(cfg);
        }
        let order: Vec<String> = if self.order.is_empty() {
            let mut o = vec!["templates".to_string(), "rules".to_string()];
            o.extend(
                self.providers
                    .keys()
                    .filter(|k| *k != "templates" && *k != "rules")
                    .cloned(),
            );
            o
        } else {
            self.order.clone()
        };
        cfg.order = order
            .iter()
            .map(|name| match self.providers.get(name) {
                Some(p) => Ok(p.clone()),
                None => match Plugin::parse(name) {
                    Some(plugin) => Ok(ProviderConfig::new(name.clone(), plugin)),
                    None => {
                        let msg = format!("{name:?} is neither a built-in provider (templates, rules, ollama, openai, anthropic, woollama) nor an [inference.providers.{name}] table");
                        Err(match &self.order_origin {
                            Some((file, line)) => {
                                ConfigError::at(file, *line, Some("inference.order".into()), msg)
                            }
                            None => ConfigError::new(super::ConfigErrorKind::Invalid(format!(
                                "inference.order: {msg}"
                            ))),
                        })
                    }
                },
            })
            .collect::<Result<_, _>>()?;
        Ok(cfg)
    }
}

/// `[inference]` as serde reads it: values keep their spans for errors.
#[derive(Deserialize, Default)]
pub(super) struct RawInference {
    #[serde(default)]
    order: Option<Spanned<Value>>,
    #[serde(default)]
    mode: Option<Spanned<Value>>,
    #[serde(default)]
    promote_after: Option<Spanned<Value>>,
    #[serde(default)]
    promote_unconfirmed: Option<Spanned<Value>>,
    #[serde(default)]
    examples: Option<Spanned<Value>>,
    #[serde(default)]
    providers: BTreeMap<String, BTreeMap<String, Spanned<Value>>>,
}

/// A number as seconds in (0, 3600].
fn secs(v: &Value) -> Option<Duration> {
    let f = v.as_float().or_else(|| v.as_integer().map(|i| i as f64))?;
    (f.is_finite() && f > 0.0 && f <= 3600.0).then(|| Duration::from_secs_f64(f))
}

/// Provider keys this runtime reads (anything else warns once).
const PROVIDER_KEYS: &[&str] = &[
    "plugin",
    "model",
    "base_url",
    "host",
    "api_key_env",
    "api_key",
    "api",
    "stream",
    "temperature",
    "retry_temperature",
    "max_tokens",
    "timeout_seconds",
    "timeout",
    "connect_timeout_seconds",
    "retries",
    "max_response_bytes",
    "seed",
    "workspace_context",
];

impl Ctx<'_> {
    /// Type one file's `[inference]`; every wrong value is an error naming
    /// the file, its line and the dotted key.
    pub(super) fn inference(
        &self,
        raw: RawInference,
        warnings: &mut Vec<String>,
    ) -> Result<Inference, ConfigError> {
        let err = |v: &Spanned<Value>, key: &str, msg: &str| {
            self.err(Some(v.span()), &format!("inference.{key}"), msg)
        };
        let mut out = Inference::default();
        if let Some(v) = &raw.order {
            let names = v.get_ref().as_array().and_then(|a| {
                a.iter()
                    .map(|x| x.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
            });
            out.order =
                names.ok_or_else(|| err(v, "order", "must be an array of provider names"))?;
            out.order_origin = Some((
                self.file.to_path_buf(),
                Some(line_of(self.text, v.span().start)),
            ));
        }
        if let Some(v) = &raw.mode {
            out.mode = Some(
                v.get_ref()
                    .as_str()
                    .ok_or_else(|| err(v, "mode", "must be a string"))?
                    .to_string(),
            );
        }
        if let Some(v) = &raw.promote_after {
            out.promote_after = Some(
                v.get_ref()
                    .as_integer()
                    .and_then(|i| u32::try_from(i).ok())
                    .ok_or_else(|| err(v, "promote_after", "must be a non-negative integer"))?,
            );
        }
        if let Some(v) = &raw.promote_unconfirmed {
            out.promote_unconfirmed = Some(
                v.get_ref()
                    .as_bool()
                    .ok_or_else(|| err(v, "promote_unconfirmed", "must be true or false"))?,
            );
        }
        if let Some(v) = &raw.examples {
            out.examples = Some(
                v.get_ref()
                    .as_integer()
                    .and_then(|i| usize::try_from(i).ok())
                    .filter(|n| *n <= 50)
                    .ok_or_else(|| err(v, "examples", "must be an integer 0..=50"))?,
            );
        }
        for (name, table) in raw.providers {
            let p = self.provider(&name, &table, warnings)?;
            out.providers.insert(name, p);
        }
        Ok(out)
    }

    fn provider(
        &self,
        name: &str,
        t: &BTreeMap<String, Spanned<Value>>,
        warnings: &mut Vec<String>,
    ) -> Result<ProviderConfig, ConfigError> {
        let err = |v: &Spanned<Value>, key: &str, msg: &str| {
            self.err(
                Some(v.span()),
                &format!("inference.providers.{name}.{key}"),
                msg,
            )
        };
        let s = |key: &str| -> Result<Option<String>, ConfigError> {
            t.get(key)
                .map(|v| {
                    v.get_ref()
                        .as_str()
                        .map(str::to_string)
                        .ok_or_else(|| err(v, key, "must be a string"))
                })
                .transpose()
        };
        let flag = |key: &str| -> Result<Option<bool>, ConfigError> {
            t.get(key)
                .map(|v| {
                    v.get_ref()
                        .as_bool()
                        .ok_or_else(|| err(v, key, "must be true or false"))
                })
                .transpose()
        };
        let int =
            |key: &str, ok: &dyn Fn(i64) -> bool, msg: &str| -> Result<Option<i64>, ConfigError> {
                t.get(key)
                    .map(|v| {
                        v.get_ref()
                            .as_integer()
                            .filter(|i| ok(*i))
                            .ok_or_else(|| err(v, key, msg))
                    })
                    .transpose()
            };
        let plugin_name = s("plugin")?.unwrap_or_else(|| name.to_string());
        let mut p = ProviderConfig::new(
            name,
            Plugin::parse(&plugin_name).unwrap_or(Plugin::Unsupported),
        );
        p.plugin_name = plugin_name;
        p.model = s("model")?;
        p.base_url = s("base_url")?
            .or(s("host")?)
            .map(|u| u.trim_end_matches('/').to_string());
        if let Some(u) = &p.base_url {
            if !(u.trim().starts_with("http://") || u.trim().starts_with("https://")) {
                let v = t.get("base_url").or(t.get("host"));
                let key = if t.contains_key("base_url") {
                    "base_url"
                } else {
                    "host"
                };
                if let Some(v) = v {
                    return Err(err(
                        v,
                        key,
                        &format!("{u:?} is not an http:// or https:// URL"),
                    ));
                }
            }
        }
        p.api_key_env = s("api_key_env")?;
        p.api_key = s("api_key")?.filter(|k| !k.is_empty()).map(Secret::new);
        p.api = s("api")?;
        if let (Some(api), Some(v)) = (&p.api, t.get("api")) {
            if api != "generate" && api != "chat" {
                return Err(err(
                    v,
                    "api",
                    &format!("{api:?} is not \"generate\" or \"chat\""),
                ));
            }
        }
        if let Some(b) = flag("stream")? {
            p.stream = b;
        }
        for (key, slot) in [
            ("temperature", &mut p.temperature),
            ("retry_temperature", &mut p.retry_temperature),
        ] {
            if let Some(v) = t.get(key) {
                let f = v
                    .get_ref()
                    .as_float()
                    .or_else(|| v.get_ref().as_integer().map(|i| i as f64));
                *slot = f
                    .filter(|f| (0.0..=2.0).contains(f))
                    .ok_or_else(|| err(v, key, "must be a number in [0, 2]"))?;
            }
        }
        if let Some(n) = int(
            "max_tokens",
            &|i| i > 0 && u32::try_from(i).is_ok(),
            "must be a positive integer",
        )? {
            p.max_tokens = u32::try_from(n).unwrap_or(u32::MAX);
        }
        // `timeout_seconds`, or the original's `timeout`.
        let timeout = t
            .get_key_value("timeout_seconds")
            .or(t.get_key_value("timeout"));
        for (slot, found) in [
            (&mut p.timeout, timeout),
            (
                &mut p.connect_timeout,
                t.get_key_value("connect_timeout_seconds"),
            ),
        ] {
            if let Some((key, v)) = found {
                *slot = secs(v.get_ref())
                    .ok_or_else(|| err(v, key, "must be a number of seconds in (0, 3600]"))?;
            }
        }
        if let Some(n) = int(
            "retries",
            &|i| (0..=10).contains(&i),
            "must be an integer 0..=10",
        )? {
            p.retries = u32::try_from(n).unwrap_or(0);
        }
        if let Some(n) = int(
            "max_response_bytes",
            &|i| i > 0,
            "must be a positive integer",
        )? {
            p.max_response_bytes = u64::try_from(n).unwrap_or(1);
        }
        if let Some(n) = int("seed", &|i| i >= 0, "must be a non-negative integer")? {
            p.seed = u64::try_from(n).ok();
        }
        p.workspace_context = flag("workspace_context")?;
        for key in t.keys().filter(|k| !PROVIDER_KEYS.contains(&k.as_str())) {
            warnings.push(format!(
                "inference.providers.{name}.{key} is ignored: not a provider key lackpy knows"
            ));
        }
        Ok(p)
    }
}
