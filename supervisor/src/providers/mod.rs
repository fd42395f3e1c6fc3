//! Tool providers other than the four file builtins: `python` (a
//! long-lived helper process per workspace running the user's trusted tool
//! functions, compatible with the original lackpy's `[[tools]]` entries),
//! `command` (argv templates run without a shell in a jail of their own),
//! `virtual` (declared in config, supplied at run time by an embedding host
//! through [`HostTools`]) and `codeintel` (`find_definitions` /
//! `find_callers` over the workspace's Python sources).
//!
//! Every call reaching this module has already been authorized by the
//! supervisor against the active profile and bound to positional arguments in
//! the spec's order; the grade of a tool always comes from its spec, never
//! from the provider. Providers only ever answer with plain [`Data`] or a
//! [`ToolFailure`] whose type is one of the contract's tool error types.

pub mod codeintel;
pub mod command;
pub mod mcp;
mod pipes;
pub mod python;
pub mod value;

use crate::tools::fs::{fail, Workspace};
use lackpy_policy::config::ToolSpec;
use lackpy_policy::wire::{Data, ToolFailure};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

/// The module the original lackpy's shipped `default_tools.toml` names for
/// its builtins (`provider = "python"`). Entries copied from it keep working:
/// they are served by lackpy's own builtins, confined to the workspace.
pub const LEGACY_BUILTINS_MODULE: &str = "lackpy.sources.builtins";

thread_local! {
    /// The wall-clock deadline and cancel flag of the run whose tool call
    /// this thread is executing (see [`with_run_deadline`]).
    static RUN: std::cell::RefCell<RunContext> =
        const { std::cell::RefCell::new(RunContext { deadline: None, cancel: None }) };
}

/// How many units of work (directory entries, files, matches) a builtin
/// tool does between two looks at the run's deadline and cancel flag
/// ([`Interrupt::tick`]). Why 256: a look costs a clock read (tens of ns);
/// 256 entries of a directory walk or files of an index take well under a
/// millisecond, so a tool stops within about a millisecond of the deadline
/// (one file's parse excepted, see `codeintel`).
pub const CHECK_EVERY: u32 = 256;

/// The run a tool call belongs to, as far as tools need to know: when it
/// must end and whether its client gave up. Captured with
/// [`RunContext::current`] and carried to helper threads with
/// [`RunContext::enter`], since the state lives in a thread-local.
#[derive(Debug, Clone, Default)]
pub struct RunContext {
    /// The run's wall-clock deadline (`None` outside a run: no limit).
    pub deadline: Option<std::time::Instant>,
    /// The run's cancel flag (`None` when the run cannot be cancelled).
    pub cancel: Option<Arc<AtomicBool>>,
}

impl RunContext {
    /// The context of the tool call this thread is executing.
    pub fn current() -> RunContext {
        RUN.with(|r| r.borrow().clone())
    }

    /// Run `f` on this thread with `self` in force (for a helper thread
    /// doing a tool's work); the previous context is restored afterwards.
    pub fn enter<T>(self, f: impl FnOnce() -> T) -> T {
        let before = RUN.with(|r| r.replace(self));
        // Restored even if `f` unwinds, so a caught panic cannot leave a
        // stale deadline on a pooled thread.
        struct Restore(Option<RunContext>);
        impl Drop for Restore {
            fn drop(&mut self) {
                if let Some(b) = self.0.take() {
                    RUN.with(|r| r.replace(b));
                }
            }
        }
        let _restore = Restore(Some(before));
        f()
    }

    /// `Err(Timeout)` once the deadline has passed or the cancel flag is set.
    ///
    /// # Errors
    /// A `Timeout` tool failure saying which.
    pub fn check(&self) -> Result<(), ToolFailure> {
        if self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
        {
            return Err(fail("Timeout", "the run was cancelled"));
        }
        if self
            .deadline
            .is_some_and(|d| std::time::Instant::now() >= d)
        {
            return Err(fail("Timeout", "the run's wall-clock limit was reached"));
        }
        Ok(())
    }
}

/// Run `f` (one tool call) with the run's wall-clock deadline in force:
/// every provider's own per-call timeout is cut to what is left of it
/// ([`clamp_timeout`]), so a slow or hung tool cannot keep a run alive past
/// its wall-clock limit.
pub fn with_run_deadline<T>(deadline: std::time::Instant, f: impl FnOnce() -> T) -> T {
    with_run(deadline, None, f)
}

/// [`with_run_deadline`] plus the run's cancel flag: builtin tools poll
/// both while they work ([`check_run`], [`Interrupt`]) and give up with a
/// `Timeout` failure when the deadline passes or the flag is set.
pub fn with_run<T>(
    deadline: std::time::Instant,
    cancel: Option<Arc<AtomicBool>>,
    f: impl FnOnce() -> T,
) -> T {
    RunContext {
        deadline: Some(deadline),
        cancel,
    }
    .enter(f)
}

/// `Err(Timeout)` when the current run's deadline has passed or it was
/// cancelled; `Ok` outside a run.
///
/// # Errors
/// A `Timeout` tool failure.
pub fn check_run() -> Result<(), ToolFailure> {
    RUN.with(|r| r.borrow().check())
}

/// A countdown for loops in tools: [`Interrupt::tick`] once per unit of
/// work looks at the run's deadline and cancel flag every [`CHECK_EVERY`]
/// units (and on the first).
#[derive(Debug, Default)]
pub struct Interrupt {
    left: u32,
}

impl Interrupt {
    /// A countdown that checks on its first tick.
    pub fn new() -> Interrupt {
        Interrupt { left: 0 }
    }

    /// One unit of work done.
    ///
    /// # Errors
    /// A `Timeout` tool failure once the run is out of time or cancelled.
    pub fn tick(&mut self) -> Result<(), ToolFailure> {
        self.spend(1)
    }

    /// `units` units of work done (a step that costs more than one).
    ///
    /// # Errors
    /// A `Timeout` tool failure once the run is out of time or cancelled.
    pub fn spend(&mut self, units: u32) -> Result<(), ToolFailure> {
        if self.left <= units {
            self.left = CHECK_EVERY;
            return check_run();
        }
        self.left -= units;
        Ok(())
    }
}

/// A provider's per-call timeout `own`, cut to the time left before the
/// current run's deadline (at least 1 ms, so the call fails fast with the
/// provider's own timeout error rather than not being tried).
pub fn clamp_timeout(own: std::time::Duration) -> std::time::Duration {
    let left = RUN.with(|r| r.borrow().deadline).map(|d| {
        d.saturating_duration_since(std::time::Instant::now())
            .max(std::time::Duration::from_millis(1))
    });
    left.map_or(own, |l| own.min(l))
}

/// [`clamp_timeout`] for timeouts in seconds.
pub fn clamp_timeout_secs(own: f64) -> f64 {
    match std::time::Duration::try_from_secs_f64(own) {
        Ok(d) => clamp_timeout(d).as_secs_f64(),
        Err(_) => own,
    }
}

/// Tools an embedding host supplies at run time (`[[virtual_tools]]`, the
/// original's `harness_resolver`). Register one with [`set_host_tools`].
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

static HOST_TOOLS: RwLock<Option<Arc<dyn HostTools>>> = RwLock::new(None);

/// Install (or with `None`, remove) the process-wide provider of virtual
/// tools. The CLI, `lackpy mcp` and `lackpy serve` never install one, so
/// their virtual tools fail cleanly when called.
pub fn set_host_tools(host: Option<Arc<dyn HostTools>>) {
    match HOST_TOOLS.write() {
        Ok(mut g) => *g = host,
        Err(poisoned) => *poisoned.into_inner() = host,
    }
}

fn host_tools() -> Option<Arc<dyn HostTools>> {
    match HOST_TOOLS.read() {
        Ok(g) => g.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    }
}

/// Whether a tool can currently be called on this host: always for real
/// providers; for `virtual` ones only when an installed [`HostTools`]
/// offers it. Front ends use this to hide unavailable tools from generation.
pub fn available(spec: &ToolSpec) -> bool {
    if spec.provider != "virtual" {
        return true;
    }
    host_tools().is_some_and(|h| h.offers(&spec.name))
}

/// Run one authorized call of a non-builtin tool, positional arguments in
/// the spec's order.
///
/// # Errors
/// The tool's failure: `BadArgument`, `ToolFailed`, `Timeout`, `TooLarge`,
/// `NotUtf8`, or whatever the builtins report for legacy entries.
pub fn call(spec: &ToolSpec, args: &[Data], ws: &Workspace) -> Result<Data, ToolFailure> {
    match spec.provider.as_str() {
        "python" => {
            if spec.provider_config.get("module").and_then(|m| m.as_str())
                == Some(LEGACY_BUILTINS_MODULE)
            {
                return legacy_builtin(spec, args, ws);
            }
            python::call(spec, args, ws)
        }
        "command" => command::call(spec, args, ws),
        "mcp" => crate::providers::mcp::call(spec, args, ws),
        "codeintel" => codeintel::call(spec, args, ws),
        "builtin" if codeintel::is_codeintel(&spec.name) => codeintel::call(spec, args, ws),
        "virtual" => match host_tools().and_then(|h| {
            // A panicking host implementation is the host's bug; it must not
            // take the supervisor's run thread down with it.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.call(&spec.name, args)))
                .unwrap_or_else(|_| {
                    Some(Err(fail(
                        "ToolFailed",
                        format!(
                            "virtual tool {:?}: the host's implementation panicked",
                            spec.name
                        ),
                    )))
                })
        }) {
            Some(r) => r,
            None => Err(fail(
                "ToolFailed",
                format!("virtual tool {:?} is not provided by this host", spec.name),
            )),
        },
        other => Err(fail(
            "ToolFailed",
            format!(
                "tool {:?}: provider {other:?} is not available on this host",
                spec.name
            ),
        )),
    }
}

/// An original-lackpy entry `module = "lackpy.sources.builtins"`: served by
/// our builtin of the same function name (the grade still comes from `spec`).
fn legacy_builtin(spec: &ToolSpec, args: &[Data], ws: &Workspace) -> Result<Data, ToolFailure> {
    let function = spec
        .provider_config
        .get("function")
        .and_then(|f| f.as_str())
        .unwrap_or(spec.name.as_str());
    if !crate::tools::BUILTINS.iter().any(|b| b.0 == function) {
        return Err(fail(
            "ToolFailed",
            format!("module {LEGACY_BUILTINS_MODULE:?} has no function {function:?}"),
        ));
    }
    let mut inner = spec.clone();
    inner.name = function.to_string();
    inner.provider = "builtin".to_string();
    crate::tools::call(&inner, args, ws)
}

/// The workspace's path (for a child's cwd and for keying helpers), read
/// back from its descriptor so the path is the directory actually opened.
///
/// # Errors
/// `ToolFailed` when the kernel cannot name the directory.
pub fn workspace_path(ws: &Workspace) -> Result<PathBuf, ToolFailure> {
    std::fs::read_link(format!("/proc/self/fd/{}", ws.fd())).map_err(|e| {
        fail(
            "ToolFailed",
            format!("cannot determine the workspace directory: {e}"),
        )
    })
}

/// A string setting of a tool's `provider_config`.
fn cfg_str<'a>(spec: &'a ToolSpec, key: &str) -> Option<&'a str> {
    spec.provider_config.get(key).and_then(|v| v.as_str())
}

/// A non-negative number setting of `provider_config` (ints or floats).
fn cfg_f64(spec: &ToolSpec, key: &str) -> Option<f64> {
    spec.provider_config
        .get(key)
        .and_then(serde_json::Value::as_f64)
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// The child environment a tool's config passes: `pass_env = ["NAME", ...]`
/// copies those variables from lackpy's own environment (when set), then
/// the `env` table (string values) adds or overrides. Sorted by name.
fn cfg_env(spec: &ToolSpec) -> Result<Vec<(String, String)>, ToolFailure> {
    let mut out: Vec<(String, String)> = Vec::new();
    if let Some(p) = spec.provider_config.get("pass_env") {
        let Some(names) = p.as_array() else {
            return Err(fail(
                "ToolFailed",
                format!(
                    "tool {:?}: pass_env must be a list of variable names",
                    spec.name
                ),
            ));
        };
        for n in names {
            let Some(n) = n.as_str() else {
                return Err(fail(
                    "ToolFailed",
                    format!(
                        "tool {:?}: pass_env must be a list of variable names",
                        spec.name
                    ),
                ));
            };
            if let Some(v) = std::env::var_os(n).and_then(|v| v.into_string().ok()) {
                out.push((n.to_string(), v));
            }
        }
    }
    let Some(v) = spec.provider_config.get("env") else {
        out.sort();
        return Ok(out);
    };
    let Some(map) = v.as_object() else {
        return Err(fail(
            "ToolFailed",
            format!(
                "tool {:?}: provider_config env must be a table of strings",
                spec.name
            ),
        ));
    };
    for (k, v) in map {
        let Some(s) = v.as_str() else {
            return Err(fail(
                "ToolFailed",
                format!("tool {:?}: env.{k} must be a string", spec.name),
            ));
        };
        if k.is_empty() || k.contains('=') || k.contains('\0') || s.contains('\0') {
            return Err(fail(
                "ToolFailed",
                format!("tool {:?}: env.{k} is not a valid variable", spec.name),
            ));
        }
        out.retain(|(name, _)| name != k);
        out.push((k.clone(), s.to_string()));
    }
    out.sort();
    Ok(out)
}

/// The minimal `PATH` a provider's child process gets unless config passes one.
pub const CHILD_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    struct Host;
    impl HostTools for Host {
        #[allow(clippy::panic)]
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
        // Serialised with other tests touching the global by running both
        // states in one test.
        set_host_tools(None);
        let e = call(&virt("ask"), &[], &ws).unwrap_err();
        assert_eq!(e.type_name, "ToolFailed");
        assert_eq!(
            e.message,
            "virtual tool \"ask\" is not provided by this host"
        );
        assert!(!available(&virt("ask")));
        set_host_tools(Some(Arc::new(Host)));
        assert!(available(&virt("ask")));
        assert!(!available(&virt("other")));
        assert_eq!(
            call(&virt("ask"), &[Data::Int(1)], &ws).unwrap(),
            Data::List(vec![Data::Int(1)])
        );
        let e = call(&virt("other"), &[], &ws).unwrap_err();
        assert!(e.message.contains("not provided"));
        let e = call(&virt("boom"), &[], &ws).unwrap_err();
        assert!(e.message.contains("panicked"), "{}", e.message);
        set_host_tools(None);
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
        assert!(e.message.contains("not available"));
    }

    #[test]
    fn env_from_config_and_pass_env() {
        let mut spec = ToolSpec {
            name: "t".into(),
            provider: "command".into(),
            ..ToolSpec::default()
        };
        spec.provider_config.insert(
            "pass_env".into(),
            serde_json::json!(["PATH", "LACKPY_SURELY_UNSET_VAR"]),
        );
        spec.provider_config
            .insert("env".into(), serde_json::json!({"B": "2", "A": "1"}));
        let env = cfg_env(&spec).unwrap();
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, vec!["A", "B", "PATH"]);
        spec.provider_config
            .insert("env".into(), serde_json::json!({"A": 1}));
        assert!(cfg_env(&spec).is_err());
        spec.provider_config
            .insert("pass_env".into(), serde_json::json!("PATH"));
        assert!(cfg_env(&spec).is_err());
    }

    #[test]
    fn workspace_path_reads_back() {
        let d = tempfile::tempdir().unwrap();
        let ws = Workspace::open(d.path()).unwrap();
        assert_eq!(
            workspace_path(&ws).unwrap(),
            d.path().canonicalize().unwrap()
        );
    }
}
