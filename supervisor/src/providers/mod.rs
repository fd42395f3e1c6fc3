//! The one dispatcher of tool calls, and the tool providers other than the
//! builtins: `python` (a long-lived helper process per workspace running
//! the user's trusted tool functions, compatible with the original
//! lackpy's `[[tools]]` entries), `command` (argv templates run without a
//! shell in a jail of their own), `mcp` (tools of `[mcp_servers]`) and
//! `virtual` (declared in config, supplied at run time by an embedding
//! host through [`HostTools`]). Builtins (`tools/`) are called from here,
//! on a confined lane when they write or index.
//!
//! Every call reaching this module has already been authorized by the
//! session against the active profile and bound to positional arguments in
//! the spec's order; the grade of a tool always comes from its spec, never
//! from the provider. Providers only ever answer with plain [`Data`] or a
//! [`ToolFailure`] whose type is one of the contract's tool error types.
//!
//! Provider state (python helpers, MCP connections, the host's virtual
//! tools) lives in a [`Providers`] value its [`crate::Supervisor`] owns:
//! two supervisors in one process share none of it.

mod child;
pub mod command;
pub mod host_configs;
pub mod mcp;
pub mod mcp_cache;
mod mcp_http;
mod mcp_lines;
mod pipes;
pub mod python;
pub mod value;

pub use crate::call::{Interrupt, RunContext, WriteBudget, CHECK_EVERY};
pub use child::{workspace_path, CHILD_PATH};
pub use mcp_lines::count_values;

use crate::tools::{self, fs::Workspace};
use lackpy_policy::config::{Provider, ToolSpec};
use lackpy_policy::wire::{Data, ToolFailure};
use std::sync::{Arc, RwLock};

/// The module the original lackpy's shipped `default_tools.toml` names for
/// its builtins (`provider = "python"`). Entries copied from it keep working:
/// they are served by lackpy's own builtins, confined to the workspace.
pub use lackpy_policy::config::LEGACY_BUILTINS_MODULE;

/// Tools an embedding host supplies at run time (`[[virtual_tools]]`, the
/// original's `harness_resolver`). Register one with
/// [`Providers::set_host_tools`].
///
/// Arguments arrive positional, in the order of the tool's declared `args`,
/// already authorized against the active profile.
pub trait HostTools: Send + Sync {
    /// Run virtual tool `name`; `None` when the host does not (or no longer)
    /// offer it, which the program sees as a clean `ToolFailed` error.
    fn call(&self, name: &str, args: &[Data]) -> Option<Result<Data, ToolFailure>>;

    /// Whether the host currently offers `name` (front ends hide tools it
    /// does not from generation). Defaults to `true`.
    fn offers(&self, name: &str) -> bool {
        let _ = name;
        true
    }
}

/// The state of every provider: python helpers, MCP servers and their
/// discovered tools, the host's virtual tools. A [`crate::Supervisor`]
/// owns one ([`crate::Supervisor::providers`]); a front end that lists
/// tools without running any may make its own.
#[derive(Default)]
pub struct Providers {
    python: python::Helpers,
    mcp: mcp::McpServers,
    host: RwLock<Option<Arc<dyn HostTools>>>,
}

impl std::fmt::Debug for Providers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Providers")
            .field("python_helpers", &self.python.live())
            .finish_non_exhaustive()
    }
}

impl Providers {
    /// No helper, server or host yet.
    pub fn new() -> Providers {
        Providers::default()
    }

    /// The python helpers.
    pub fn python(&self) -> &python::Helpers {
        &self.python
    }

    /// The MCP servers (`[mcp_servers]`): starting them, their tools.
    pub fn mcp(&self) -> &mcp::McpServers {
        &self.mcp
    }

    /// Install (or with `None`, remove) the provider of virtual tools. The
    /// CLI, `lackpy mcp` and `lackpy serve` never install one, so their
    /// virtual tools fail cleanly when called.
    pub fn set_host_tools(&self, host: Option<Arc<dyn HostTools>>) {
        match self.host.write() {
            Ok(mut g) => *g = host,
            Err(poisoned) => *poisoned.into_inner() = host,
        }
    }

    fn host_tools(&self) -> Option<Arc<dyn HostTools>> {
        match self.host.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Whether a tool can currently be called: always for real providers;
    /// for `virtual` ones only when an installed [`HostTools`] offers it.
    /// Front ends use this to hide unavailable tools from generation.
    pub fn available(&self, spec: &ToolSpec) -> bool {
        if spec.provider != "virtual" {
            return true;
        }
        self.host_tools().is_some_and(|h| h.offers(&spec.name))
    }

    /// Run one authorized call, positional arguments in the spec's order,
    /// for the run `run`. A builtin that writes or indexes runs on a
    /// confined lane ([`crate::confine`]): landlocked to the workspace,
    /// read-only unless the tool writes, no network, no execute; the
    /// arguments are shared with it, not copied.
    ///
    /// # Errors
    /// The tool's failure: `BadArgument`, `ToolFailed`, `Timeout`,
    /// `TooLarge`, `NotUtf8`, or a builtin's file errors.
    pub fn call(
        &self,
        spec: &ToolSpec,
        args: Arc<Vec<Data>>,
        ws: &Workspace,
        run: &RunContext,
    ) -> Result<Data, ToolFailure> {
        let provider = Provider::of(spec).map_err(|e| {
            ToolFailure::new(
                "ToolFailed",
                format!("tool {:?} is misconfigured: {e}", spec.name),
            )
        })?;
        let function = match &provider {
            Provider::Builtin { function } if tools::is_builtin(function) => function.as_str(),
            Provider::Builtin { function } if legacy_builtin(spec) => {
                return Err(ToolFailure::new(
                    "ToolFailed",
                    format!("module {LEGACY_BUILTINS_MODULE:?} has no function {function:?}"),
                ))
            }
            Provider::Builtin { function } => {
                return Err(ToolFailure::new(
                    "ToolFailed",
                    format!("no builtin tool named {function:?}"),
                ))
            }
            Provider::Python(py) => return python::call(&self.python, py, spec, &args, ws, run),
            Provider::Command(c) => return command::call(c, spec, &args, ws, run),
            Provider::Mcp(m) => return self.mcp.call(m, spec, &args, ws, run),
            Provider::Virtual => return self.call_virtual(spec, &args),
        };
        let access = match function {
            // Every open of these is a single `openat2` beneath the
            // workspace descriptor, so the kernel already confines them and
            // the hot path keeps no thread hop (a hop per call cost ~1 ms
            // under CPU contention: a flood of 10,000 calls then ran past
            // the wall clock).
            "read_file" | "find_files" => return tools::call(function, spec, &args, ws, run),
            "write_file" | "edit_file" => crate::confine::Access::Write,
            _ => crate::confine::Access::Read,
        };
        let ws2 = ws.try_clone().map_err(|e| {
            ToolFailure::new("ToolFailed", format!("cannot share the workspace: {e}"))
        })?;
        let (spec2, run2, function) = (spec.clone(), run.clone(), function.to_string());
        crate::confine::run(ws.path(), access, run, move || {
            tools::call(&function, &spec2, &args, &ws2, &run2)
        })
    }

    fn call_virtual(&self, spec: &ToolSpec, args: &[Data]) -> Result<Data, ToolFailure> {
        let answer = self.host_tools().and_then(|h| {
            // A panicking host implementation is the host's bug; it must not
            // take the supervisor's run thread down with it.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.call(&spec.name, args)))
                .unwrap_or_else(|_| {
                    Some(Err(ToolFailure::new(
                        "ToolFailed",
                        format!(
                            "virtual tool {:?}: the host's implementation panicked",
                            spec.name
                        ),
                    )))
                })
        });
        answer.unwrap_or_else(|| {
            Err(ToolFailure::new(
                "ToolFailed",
                format!("virtual tool {:?} is not provided by this host", spec.name),
            ))
        })
    }
}

/// The builtin function `spec` runs when it is one the supervisor
/// implements itself (the file tools and code intelligence, also behind an
/// alias, a `codeintel` entry or an original-lackpy
/// `lackpy.sources.builtins` entry naming one of them).
pub fn builtin_function(spec: &ToolSpec) -> Option<String> {
    match Provider::of(spec) {
        Ok(Provider::Builtin { function }) if tools::is_builtin(&function) => Some(function),
        _ => None,
    }
}

/// An original-lackpy entry `module = "lackpy.sources.builtins"`.
fn legacy_builtin(spec: &ToolSpec) -> bool {
    spec.provider_config.get("module").and_then(|m| m.as_str()) == Some(LEGACY_BUILTINS_MODULE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call outside any run.
    fn call_with(
        p: &Providers,
        spec: &ToolSpec,
        args: &[Data],
        ws: &Workspace,
    ) -> Result<Data, ToolFailure> {
        p.call(spec, Arc::new(args.to_vec()), ws, &RunContext::default())
    }

    fn call(spec: &ToolSpec, args: &[Data], ws: &Workspace) -> Result<Data, ToolFailure> {
        call_with(&Providers::new(), spec, args, ws)
    }

    struct Host;
    impl HostTools for Host {
        fn call(&self, name: &str, args: &[Data]) -> Option<Result<Data, ToolFailure>> {
            if name == "boom" {
                panic!("host bug");
            }
            (name == "ask").then(|| Ok(Data::List(args.to_vec())))
        }
        fn offers(&self, name: &str) -> bool {
            name == "ask"
        }
    }

    fn virt(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            provider: "virtual".into(),
            ..ToolSpec::default()
        }
    }

    #[test]
    fn virtual_tools_through_host_and_without() {
        let d = tempfile::tempdir().unwrap();
        let ws = Workspace::open(d.path()).unwrap();
        let p = Providers::new();
        let call = |spec: &ToolSpec, args: &[Data], ws: &Workspace| call_with(&p, spec, args, ws);
        let e = call(&virt("ask"), &[], &ws).unwrap_err();
        assert_eq!(e.type_name, "ToolFailed");
        assert_eq!(
            e.message,
            "virtual tool \"ask\" is not provided by this host"
        );
        assert!(!p.available(&virt("ask")));
        p.set_host_tools(Some(Arc::new(Host)));
        assert!(p.available(&virt("ask")));
        assert!(!p.available(&virt("other")));
        // Another value's host tools are its own.
        assert!(!Providers::new().available(&virt("ask")));
        assert_eq!(
            call(&virt("ask"), &[Data::Int(1)], &ws).unwrap(),
            Data::List(vec![Data::Int(1)])
        );
        let e = call(&virt("other"), &[], &ws).unwrap_err();
        assert!(e.message.contains("not provided"));
        let e = call(&virt("boom"), &[], &ws).unwrap_err();
        assert!(e.message.contains("panicked"), "{}", e.message);
        p.set_host_tools(None);
        assert!(!p.available(&virt("ask")));
    }

    #[test]
    fn legacy_builtins_module_maps_to_builtins() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.txt"), "hi").unwrap();
        let ws = Workspace::open(d.path()).unwrap();
        let mut spec = ToolSpec {
            name: "rf".into(),
            provider: "python".into(),
            ..ToolSpec::default()
        };
        spec.provider_config
            .insert("module".into(), LEGACY_BUILTINS_MODULE.into());
        spec.provider_config
            .insert("function".into(), "read_file".into());
        assert_eq!(
            call(&spec, &[Data::Str("a.txt".into())], &ws).unwrap(),
            Data::Str("hi".into())
        );
        let e = call(&spec, &[Data::Str("../x".into())], &ws).unwrap_err();
        assert_eq!(e.type_name, "PathOutsideWorkspace");
        spec.provider_config
            .insert("function".into(), "nope".into());
        assert_eq!(call(&spec, &[], &ws).unwrap_err().type_name, "ToolFailed");
    }

    #[test]
    fn unknown_provider_is_clean() {
        let d = tempfile::tempdir().unwrap();
        let ws = Workspace::open(d.path()).unwrap();
        let spec = ToolSpec {
            name: "x".into(),
            provider: "no-such-provider".into(),
            ..ToolSpec::default()
        };
        let e = call(&spec, &[], &ws).unwrap_err();
        assert_eq!(e.type_name, "ToolFailed");
        assert!(
            e.message.contains("is misconfigured") && e.message.contains("not a provider"),
            "{}",
            e.message
        );
    }
}
