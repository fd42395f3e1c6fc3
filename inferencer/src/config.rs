//! Turning the `[inference]` providers into HTTP endpoints.
//!
//! The section itself is typed once, by `lackpy-policy` when the config
//! file is loaded ([`lackpy_policy::config::Inference`], with file, line
//! and key in its errors); this module re-exports those types and adds what
//! needs the environment or the wire formats: [`ProviderEndpoint::endpoint`]
//! (the base URL from the config, `OLLAMA_HOST`, `OPENAI_BASE_URL` or
//! `ANTHROPIC_BASE_URL`; the API key from its variable) and
//! [`ProviderEndpoint::context_enabled`].
//!
//! Pure: API keys are looked up through a caller-supplied environment
//! function so tests never touch the real one.

use crate::http::{Endpoint, Secret, Wire};
pub use lackpy_policy::config::{InferenceConfig, Plugin, ProviderConfig};
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

/// What a provider needs from the environment and the wire formats.
pub trait ProviderEndpoint {
    /// Whether the workspace view goes into this provider's prompts:
    /// `workspace_context` when set, else true only for an endpoint whose
    /// host is a loopback name or address.
    fn context_enabled(&self, endpoint: &Endpoint) -> bool;

    /// Resolve into a concrete HTTP endpoint (`None` for templates/rules).
    ///
    /// `env` looks up environment variables (the API key, the base URL
    /// variables).
    ///
    /// # Errors
    /// A woollama model string with an unknown provider prefix, a missing
    /// API key for a provider that needs one, a base URL from the
    /// environment that is not `http(s)://`.
    fn endpoint(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Endpoint>, ConfigError>;
}

impl ProviderEndpoint for ProviderConfig {
    /// Whether the workspace view goes into this provider's prompts:
    /// `workspace_context` when set, else true only for an endpoint whose
    /// host is a loopback name or address.
    fn context_enabled(&self, endpoint: &Endpoint) -> bool {
        self.workspace_context
            .unwrap_or_else(|| is_loopback_url(&endpoint.url))
    }

    fn endpoint(
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The section as the CLI gets it: typed by policy, then resolved.
    fn parse(s: &str) -> Result<InferenceConfig, String> {
        lackpy_policy::config::Config::parse(s, std::path::Path::new("config.toml"))
            .and_then(|c| c.inference.resolve())
            .map_err(|e| e.to_string())
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
        for (host, url) in [
            ("example.org", Some("http://example.org:11434")),
            ("https://h:5/x/", Some("https://h:5/x")),
            ("[::1]", Some("http://[::1]:11434")),
            (" ", None),
        ] {
            assert_eq!(ollama_host_url(host).as_deref(), url, "{host}");
        }
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
