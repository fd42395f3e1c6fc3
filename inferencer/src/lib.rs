//! lackpy's inferencer: intent → program text, with zero world coupling.
//!
//! - [`pipeline`]: the provider cascade (templates → rules → models), one
//!   correction retry per model, attempts recorded for `delegate --json`.
//! - [`http`]: [`http::generate`], the pure model call (Ollama generate/chat,
//!   OpenAI-compatible, Anthropic; streaming; bounded time, size, retries)
//!   over `ureq` to an address the supervisor resolved. It is what the
//!   jailed inferencer worker runs.
//! - [`prompt`], [`corpus`], [`clean`], [`hints`]: Jupyter-cell prompts,
//!   keyword+synonym example retrieval, answer cleaning, correction hints.
//! - [`templates`]: templates, rules and the ratchet (`.lackpy/templates.toml`).
//! - [`config`]: providers as HTTP endpoints (the `[inference]` section
//!   itself is typed by `lackpy-policy` when the config loads).
//!
//! - [`context`]: the bounded workspace view put into prompts as text
//!   (built in the supervisor process, confined beneath the workspace).
//!
//! Besides `.lackpy/templates.toml` and `.lackpy/ratchet.json`, this crate
//! reads workspace files only for [`context`] (in the supervisor process,
//! never in the jailed worker); it never sees tool results, and never logs
//! API keys.
#![warn(missing_docs)]

pub mod clean;
pub mod config;
pub mod context;
pub mod corpus;
pub mod hints;
pub mod http;
pub mod pipeline;
pub mod prompt;
pub mod templates;
pub mod worker;

pub use config::{InferenceConfig, Plugin, ProviderConfig};
pub use http::{generate, Endpoint, Generation, InferError, Request};
pub use pipeline::{Attempt, Delegation, Delegator, InProcess, ModelCaller, RunCheck};
pub use prompt::ToolDoc;
pub use templates::{record_success, Ratchet, TemplateSet};
