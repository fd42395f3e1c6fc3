//! An in-process [`Backend`] for protocol tests: canned answers, a program
//! `sleep` that blocks until cancelled, and variables echoed for sessions.

use crate::mcp::backend::{
    failed_run, ArgInfo, Backend, Cancel, ProfileInfo, RunOutcome, RunRequest, ToolInfo,
    ValidateRequest,
};
use lackpy_policy::wire::{Data, ErrorInfo, ErrorKind};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Counters the tests read.
#[derive(Default)]
pub struct Stats {
    /// Runs that saw their cancel flag.
    pub cancelled: AtomicUsize,
    /// Runs in flight right now.
    pub in_flight: AtomicUsize,
    /// Most runs seen in flight at once.
    pub max_in_flight: AtomicUsize,
    /// `shutdown` calls.
    pub shutdowns: AtomicUsize,
}

pub struct Fake {
    pub stats: Arc<Stats>,
    pub slots: usize,
}

fn tool(name: &str, desc: &str, arg: &str, d: u8) -> ToolInfo {
    ToolInfo {
        name: name.into(),
        description: desc.into(),
        args: vec![ArgInfo {
            name: arg.into(),
            type_name: "str".into(),
            description: String::new(),
        }],
        returns: "str".into(),
        grade_w: 1,
        effects_ceiling: d,
        provider: "builtin".into(),
        docs: Some(format!("docs/{name}.md")),
    }
}

impl Fake {
    fn tools() -> Vec<ToolInfo> {
        vec![
            tool(
                "read_file",
                "Read a UTF-8 text file from the workspace.",
                "path",
                0,
            ),
            tool(
                "find_files",
                "Glob for files in the workspace.",
                "pattern",
                0,
            ),
            tool(
                "write_file",
                "Write a text file in the workspace.",
                "path",
                3,
            ),
        ]
    }
}

impl Backend for Fake {
    fn run_program(&self, req: RunRequest, cancel: &Cancel) -> RunOutcome {
        let now = self.stats.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.stats.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let out = match req.program.trim() {
            "sleep" => {
                let start = Instant::now();
                while !cancel.is_cancelled() && start.elapsed() < Duration::from_secs(10) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                if cancel.is_cancelled() {
                    self.stats.cancelled.fetch_add(1, Ordering::SeqCst);
                }
                RunOutcome {
                    report: failed_run(ErrorInfo::new(ErrorKind::Limit, "timeout", "slept")),
                    vars: None,
                    skipped_vars: Vec::new(),
                    run_id: None,
                }
            }
            "nap" => {
                std::thread::sleep(Duration::from_millis(200));
                RunOutcome {
                    report: ok_run(json!(1), "1"),
                    vars: None,
                    skipped_vars: Vec::new(),
                    run_id: None,
                }
            }
            "boom" => {
                let e = ErrorInfo::new(ErrorKind::Runtime, "NameError", "name 'x' is not defined")
                    .at(1, 1);
                RunOutcome {
                    report: failed_run(e),
                    vars: None,
                    skipped_vars: Vec::new(),
                    run_id: None,
                }
            }
            "vars" => {
                let names: Vec<String> = req.initial_vars.iter().map(|(n, _)| n.clone()).collect();
                let n = i64::try_from(req.initial_vars.len()).unwrap_or(0);
                RunOutcome {
                    report: ok_run(json!(names), &format!("{names:?}")),
                    vars: Some(vec![(format!("v{n}"), Data::Int(n))]),
                    skipped_vars: Vec::new(),
                    run_id: None,
                }
            }
            "big" => {
                let xs: Vec<i64> = (0..5000).collect();
                RunOutcome {
                    report: ok_run(json!(xs), &format!("{xs:?}")),
                    vars: None,
                    skipped_vars: Vec::new(),
                    run_id: None,
                }
            }
            other => RunOutcome {
                report: ok_run(json!(other.len()), &other.len().to_string()),
                vars: None,
                skipped_vars: Vec::new(),
                run_id: None,
            },
        };
        self.stats.in_flight.fetch_sub(1, Ordering::SeqCst);
        out
    }

    fn validate(&self, req: ValidateRequest) -> Value {
        if req.program.contains("import") {
            let message = "import is not allowed";
            let e = ErrorInfo::new(ErrorKind::Validation, "ForbiddenStatement", message).at(1, 1);
            json!({"ok": false, "grade": null, "calls": [], "error": e})
        } else {
            json!({"ok": true, "grade": {"w": 1, "d": 0}, "calls": ["read_file"], "error": null})
        }
    }

    fn profiles(&self) -> Result<Vec<ProfileInfo>, ErrorInfo> {
        Ok(vec![
            ProfileInfo {
                name: "(default)".into(),
                description: "read-only".into(),
                tools: Fake::tools()[..2].to_vec(),
                is_default: true,
            },
            ProfileInfo {
                name: "edit".into(),
                description: "read-write".into(),
                tools: Fake::tools(),
                is_default: false,
            },
        ])
    }

    fn profile(&self, name: Option<&str>) -> Result<ProfileInfo, ErrorInfo> {
        let all = self.profiles()?;
        match name {
            None => all.into_iter().find(|p| p.is_default),
            Some(n) => all.into_iter().find(|p| p.name == n),
        }
        .ok_or_else(|| {
            ErrorInfo::new(
                ErrorKind::Validation,
                "UnknownProfile",
                format!("no profile {name:?}"),
            )
        })
    }

    fn toolbox(&self) -> Result<Vec<ToolInfo>, ErrorInfo> {
        Ok(Fake::tools())
    }

    fn resolve_doc(&self, path: &str) -> Result<String, ErrorInfo> {
        match path {
            "docs/read_file.md" => Ok("# read_file\nReads a file.".into()),
            _ => Err(ErrorInfo::new(
                ErrorKind::Validation,
                "UnknownDoc",
                format!("no doc {path:?}"),
            )),
        }
    }

    fn traces(&self, limit: usize) -> Result<Vec<Value>, ErrorInfo> {
        Ok((0..limit.min(3)).map(|i| json!({"run": i})).collect())
    }

    fn max_concurrent_runs(&self) -> usize {
        self.slots
    }

    fn shutdown(&self) {
        self.stats.shutdowns.fetch_add(1, Ordering::SeqCst);
    }
}

fn ok_run(value: Value, repr: &str) -> Value {
    json!({"ok": true, "value": value, "repr": repr, "stdout": "", "grade": {"w": 0, "d": 0}, "trace": [], "error": null})
}
