//! What the MCP server needs from the rest of lackpy, as one small trait.
//!
//! The protocol layer (`mcp::server`) only speaks to a [`Backend`]; the real
//! one (`mcp::real`) sits on the config loader, the validator and the
//! supervisor, and tests use an in-process fake. Every method is blocking and
//! is called from `tokio::task::spawn_blocking`, so an implementation may
//! wait on a worker without stalling the protocol loop.
//!
//! Results are the CLI contract's JSON objects (they always carry `"ok"`), so
//! the server can pass them through as `structuredContent` unchanged.

use crate::mcp::session::{Budget, SessionLimits};
use lackpy_policy::wire::{Data, ErrorInfo, ErrorKind};
use serde::Serialize;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A program to run, as `run_program` received it.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// Program text.
    pub program: String,
    /// Profile name (`None`: the configured default).
    pub profile: Option<String>,
    /// Ad-hoc tool list instead of a profile.
    pub tools: Option<Vec<String>>,
    /// Variables left by earlier cells of the same session, to be bound
    /// before the program starts (empty without a session).
    pub initial_vars: Vec<(String, Data)>,
    /// Whether the caller wants the plain-data variables the program leaves
    /// (it passed a session id).
    pub want_vars: bool,
}

/// The end of a run.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The contract object `{ok, value, repr, stdout, grade, trace, error}`.
    pub report: Value,
    /// Plain-data top-level variables the program left, when the backend can
    /// report them; `None` when it cannot (sessions then carry nothing over).
    pub vars: Option<Vec<(String, Data)>>,
    /// Variables the run left that could not be kept (not plain data, or
    /// beyond the worker's size bound); empty when unknown.
    pub skipped_vars: Vec<String>,
    /// The run's id in the trace store, when the run got one.
    pub run_id: Option<String>,
}

/// A program to validate.
#[derive(Debug, Clone, Default)]
pub struct ValidateRequest {
    /// Program text.
    pub program: String,
    /// Profile name (`None`: the configured default).
    pub profile: Option<String>,
    /// Ad-hoc tool list instead of a profile.
    pub tools: Option<Vec<String>>,
}

/// One argument of a tool, for discovery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArgInfo {
    /// Argument name.
    pub name: String,
    /// Python type annotation (`str`), empty when unknown.
    #[serde(rename = "type")]
    pub type_name: String,
    /// What it means.
    pub description: String,
}

/// A tool as a calling model sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolInfo {
    /// Name programs use.
    pub name: String,
    /// One-paragraph description.
    pub description: String,
    /// Arguments, in order.
    pub args: Vec<ArgInfo>,
    /// Return type annotation.
    pub returns: String,
    /// World coupling (0–3).
    pub grade_w: u8,
    /// Effects ceiling (0–3).
    pub effects_ceiling: u8,
    /// Provider (`builtin`, `command`, `mcp`, ...).
    pub provider: String,
    /// Relative path of the tool's doc file, for `resolve_doc`.
    pub docs: Option<String>,
}

impl ToolInfo {
    /// Python-style signature: `read_file(path: str) -> str`.
    pub fn signature(&self) -> String {
        let args: Vec<(&str, &str)> = self
            .args
            .iter()
            .map(|a| (a.name.as_str(), a.type_name.as_str()))
            .collect();
        lackpy_policy::config::signature(&self.name, &args, &self.returns)
    }

    /// The JSON object `list_tools` and `describe_tool` show.
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "signature": self.signature(),
            "description": self.description,
            "args": self.args,
            "returns": self.returns,
            "grade": {"w": self.grade_w, "d": self.effects_ceiling},
            "provider": self.provider,
            "docs": self.docs,
        })
    }
}

/// A profile, for discovery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProfileInfo {
    /// Profile name.
    pub name: String,
    /// What it is for (may be empty).
    pub description: String,
    /// Its tools, under the names programs use.
    pub tools: Vec<ToolInfo>,
    /// Whether calls without a profile use it.
    pub is_default: bool,
}

/// Cancellation of one blocking backend call: set by the server when the
/// client sends `notifications/cancelled` or the server shuts down, polled
/// (or hooked) by the backend to kill the run's worker.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A fresh, un-cancelled token.
    pub fn new() -> Self {
        Cancel::default()
    }
    /// Ask the call to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    /// Whether stop was asked.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
    /// The shared flag itself, for a supervisor to poll while it waits on a
    /// worker (`lackpy_supervisor::RunOptions::cancel`).
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0)
    }
}

/// lackpy as the MCP server sees it. All methods block; all return plain data.
pub trait Backend: Send + Sync + 'static {
    /// Validate and run a program in a jailed worker. Never fails: every
    /// failure is the report's `error` object.
    fn run_program(&self, req: RunRequest, cancel: &Cancel) -> RunOutcome;

    /// Validate a program: the contract object `{ok, grade, calls, error}`.
    fn validate(&self, req: ValidateRequest) -> Value;

    /// Every profile that can be named.
    ///
    /// # Errors
    /// The configuration could not be loaded.
    fn profiles(&self) -> Result<Vec<ProfileInfo>, ErrorInfo>;

    /// One profile resolved (`None`: the default profile).
    ///
    /// # Errors
    /// Unknown profile, or the configuration could not be loaded.
    fn profile(&self, name: Option<&str>) -> Result<ProfileInfo, ErrorInfo>;

    /// Every tool of the toolbox, whether or not a profile grants it.
    ///
    /// # Errors
    /// The configuration could not be loaded.
    fn toolbox(&self) -> Result<Vec<ToolInfo>, ErrorInfo>;

    /// The text of a doc file named by a tool's `docs` (a relative path).
    ///
    /// # Errors
    /// The path is not a known doc, or it cannot be read.
    fn resolve_doc(&self, path: &str) -> Result<String, ErrorInfo>;

    /// The most recent traces, newest first, at most `limit`.
    ///
    /// # Errors
    /// The trace store could not be read.
    fn traces(&self, limit: usize) -> Result<Vec<Value>, ErrorInfo>;

    /// Turn an intent into a program and run it. The default says no
    /// inference provider is available.
    fn delegate(&self, intent: &str, profile: Option<&str>) -> Value {
        let _ = (intent, profile);
        failure(ErrorInfo {
            hint: Some(
                "write the program yourself and call run_program; configure [inference] to enable delegate"
                    .into(),
            ),
            ..ErrorInfo::new(
                ErrorKind::Internal,
                "NoInferenceProvider",
                "no inference provider is configured or available in this build",
            )
        })
    }

    /// The caller's verdict on a delegate result (by run id), for the
    /// ratchet. The default says no inference provider is available.
    fn confirm_result(&self, run_id: &str, correct: bool) -> Value {
        let _ = (run_id, correct);
        failure(ErrorInfo::new(
            ErrorKind::Internal,
            "NoInferenceProvider",
            "no inference provider is configured or available in this build",
        ))
    }

    /// How many runs may be in flight at once (the warm pool's size).
    fn max_concurrent_runs(&self) -> usize {
        4
    }

    /// Caps of this connection's notebook sessions, and the shared budgets
    /// (per client, per server) its sessions are charged to. The default:
    /// [`SessionLimits::default`] and no shared budget (one connection per
    /// process, as `lackpy mcp`).
    fn session_policy(&self) -> (SessionLimits, Vec<Budget>) {
        (SessionLimits::default(), Vec::new())
    }

    /// The server is going away: kill every in-flight worker now.
    fn shutdown(&self) {}
}

/// `{"ok": false, "error": …}`: a failed call's structured content.
pub fn failure(error: ErrorInfo) -> Value {
    json!({"ok": false, "error": error})
}

/// A contract-shaped run report for a run that never started.
pub fn failed_run(error: ErrorInfo) -> Value {
    json!({
        "ok": false,
        "value": null,
        "repr": null,
        "stdout": "",
        "grade": null,
        "trace": [],
        "error": error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_renders_like_python() {
        let t = ToolInfo {
            name: "read_file".into(),
            description: String::new(),
            args: vec![ArgInfo {
                name: "path".into(),
                type_name: "str".into(),
                description: String::new(),
            }],
            returns: "str".into(),
            grade_w: 1,
            effects_ceiling: 0,
            provider: "builtin".into(),
            docs: None,
        };
        assert_eq!(t.signature(), "read_file(path: str) -> str");
        let bare = ToolInfo {
            args: vec![],
            returns: String::new(),
            ..t
        };
        assert_eq!(bare.signature(), "read_file()");
    }

    #[test]
    fn cancel_is_shared() {
        let c = Cancel::new();
        let d = c.clone();
        assert!(!d.is_cancelled());
        c.cancel();
        assert!(d.is_cancelled());
    }
}
