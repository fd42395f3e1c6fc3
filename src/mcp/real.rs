//! The real backend: configuration, the validator and the supervisor.
//! (Interim: config loading and the supervisor are being built in parallel;
//! until they land this serves the default read-only builtins and reports
//! runs as an internal error.)

use crate::mcp::backend::{
    failed_run, ArgInfo, Backend, Cancel, ProfileInfo, RunOutcome, RunRequest, ToolInfo,
    ValidateRequest,
};
use lackpy_policy::lang::{Grade, Namespace, ToolEntry};
use lackpy_policy::wire::{ErrorInfo, ErrorKind, Limits};
use serde_json::{json, Value};
use std::path::PathBuf;

/// Backend over the workspace's configuration and the supervisor.
pub struct RealBackend {
    /// Workspace directory the file tools act in.
    pub workspace: PathBuf,
    /// Profile used when a call names neither a profile nor tools.
    pub default_profile: Option<String>,
}

fn builtin(name: &str, desc: &str, arg: &str, ty: &str, returns: &str) -> ToolInfo {
    ToolInfo {
        name: name.into(),
        description: desc.into(),
        args: vec![ArgInfo {
            name: arg.into(),
            type_name: ty.into(),
            description: String::new(),
        }],
        returns: returns.into(),
        grade_w: 1,
        effects_ceiling: 0,
        provider: "builtin".into(),
        docs: None,
    }
}

impl RealBackend {
    fn default_tools() -> Vec<ToolInfo> {
        vec![
            builtin(
                "read_file",
                "Read a UTF-8 text file of the workspace and return its text.",
                "path",
                "str",
                "str",
            ),
            builtin(
                "find_files",
                "Paths in the workspace matching a glob pattern, sorted.",
                "pattern",
                "str",
                "list[str]",
            ),
        ]
    }

    fn namespace(tools: &[ToolInfo]) -> Namespace {
        Namespace {
            tools: tools
                .iter()
                .map(|t| ToolEntry {
                    name: t.name.clone(),
                    target: t.name.clone(),
                    args: t.args.iter().map(|a| a.name.clone()).collect(),
                    grade: Grade {
                        w: t.grade_w,
                        d: t.effects_ceiling,
                    },
                })
                .collect(),
        }
    }

    fn select(
        &self,
        profile: Option<&str>,
        tools: Option<&[String]>,
    ) -> Result<Vec<ToolInfo>, ErrorInfo> {
        let all = self.toolbox()?;
        if let Some(names) = tools {
            let mut out = Vec::new();
            for n in names {
                match all.iter().find(|t| &t.name == n) {
                    Some(t) => out.push(t.clone()),
                    None => {
                        return Err(ErrorInfo::new(
                            ErrorKind::Validation,
                            "UnknownTool",
                            format!("no tool named {n:?}"),
                        ))
                    }
                }
            }
            return Ok(out);
        }
        Ok(self.profile(profile)?.tools)
    }
}

impl Backend for RealBackend {
    fn run_program(&self, req: RunRequest, cancel: &Cancel) -> RunOutcome {
        if cancel.is_cancelled() {
            return RunOutcome {
                report: failed_run(ErrorInfo::new(
                    ErrorKind::Internal,
                    "Cancelled",
                    "the run was cancelled",
                )),
                vars: None,
            };
        }
        let _ = (
            &self.workspace,
            req.want_vars,
            &req.initial_vars,
            &req.program,
        );
        let report = match self.select(req.profile.as_deref(), req.tools.as_deref()) {
            Err(e) => failed_run(e),
            Ok(_) => failed_run(ErrorInfo::new(
                ErrorKind::Internal,
                "NotImplemented",
                "the supervisor is not available in this build",
            )),
        };
        RunOutcome { report, vars: None }
    }

    fn validate(&self, req: ValidateRequest) -> Value {
        let tools = match self.select(req.profile.as_deref(), req.tools.as_deref()) {
            Ok(t) => t,
            Err(e) => return json!({"ok": false, "grade": null, "calls": [], "error": e}),
        };
        match lackpy_policy::validate(&req.program, &Self::namespace(&tools), &Limits::default()) {
            Ok(p) => json!({"ok": true, "grade": p.grade, "calls": p.calls, "error": null}),
            Err(errs) => {
                json!({"ok": false, "grade": null, "calls": [], "error": errs.into_iter().next()})
            }
        }
    }

    fn profiles(&self) -> Result<Vec<ProfileInfo>, ErrorInfo> {
        Ok(vec![ProfileInfo {
            name: "(default)".into(),
            description: "the read-only builtins".into(),
            tools: Self::default_tools(),
            is_default: true,
        }])
    }

    fn profile(&self, name: Option<&str>) -> Result<ProfileInfo, ErrorInfo> {
        let name = name.or(self.default_profile.as_deref());
        self.profiles()?
            .into_iter()
            .find(|p| name.map_or(p.is_default, |n| p.name == n))
            .ok_or_else(|| {
                ErrorInfo::new(
                    ErrorKind::Validation,
                    "UnknownProfile",
                    format!("no profile named {:?}", name.unwrap_or("")),
                )
            })
    }

    fn toolbox(&self) -> Result<Vec<ToolInfo>, ErrorInfo> {
        Ok(Self::default_tools())
    }

    fn resolve_doc(&self, path: &str) -> Result<String, ErrorInfo> {
        Err(ErrorInfo::new(
            ErrorKind::Validation,
            "UnknownDoc",
            format!("no tool documents {path:?}"),
        ))
    }

    fn traces(&self, _limit: usize) -> Result<Vec<Value>, ErrorInfo> {
        Ok(Vec::new())
    }
}
