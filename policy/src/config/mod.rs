//! Configuration: tool specs, the toolbox, profiles, `[sandbox]` and
//! `[inference]`, compatible with the original lackpy's `.lackpy/config.toml`
//! and `.kit` files. Pure: callers read the files and hand the text in.
//! (STUB: the policy work fills this in, keeping these public names.)

use crate::lang::{Grade, Namespace, ToolEntry};
use crate::wire::Limits;
use serde::{Deserialize, Serialize};

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
                    grade: Grade { w: spec.grade_w, d: spec.effects_ceiling },
                })
                .collect(),
        }
    }
}
