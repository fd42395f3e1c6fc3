//! `lackpy delegate "INTENT" [--profile NAME | --tools a,b] [--workspace DIR]
//! [--json] [--model M] [--ollama-url U] [--promote]`: turn an intent into
//! a program (templates → rules → models, see `lackpy_inferencer`), validate
//! it, and run it through the supervisor's jailed executor.
//!
//! With `--json`, stdout carries one object: the run contract object plus
//! `"program"`, `"provider"` and `"attempts": [{"provider", "raw",
//! "program", "error", "duration_ms"}]`.
//!
//! Exit status: as `lackpy run` once a program ran (0 ok, 1 runtime/tool/
//! limit, 4 internal). When no provider produced a valid program: 2 if some
//! provider answered with a program that failed validation (the error is
//! the last validation error, its message prefixed "no provider produced a
//! valid program"); 1 if no provider produced a program at all (model
//! unreachable, timed out, garbage; error kind `tool`, type
//! `InferenceFailed`, naming each provider's URL and reason); 3 for usage
//! and configuration errors.

use super::common::{self, Select};
use lackpy_inferencer::client::{self, Url};
use lackpy_inferencer::corpus::Corpus;
use lackpy_inferencer::pipeline::{Delegation, Delegator, ModelCaller};
use lackpy_inferencer::worker::{FromInferencer, ToInferencer, INFERENCER_PROTOCOL};
use lackpy_inferencer::{Generation, InferError, Request};
use lackpy_inferencer::{InferenceConfig, TemplateSet, ToolDoc};
use lackpy_policy::wire::ErrorInfo;
use lackpy_supervisor::spawn::{self, ExeHandle, Greeting};
use lackpy_supervisor::{RunRequest, Supervisor, SupervisorConfig};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Arguments of `lackpy delegate`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// What the program should do, in plain words.
    pub intent: String,
    #[command(flatten)]
    pub select: Select,
    /// Print one JSON object (the run contract plus program, provider, attempts).
    #[arg(long)]
    pub json: bool,
    /// Use this model instead of the configured model providers
    /// (`qwen2.5-coder:7b` for Ollama, or `ollama/…`, `openai/…`, `anthropic/…`).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Base URL of Ollama (default http://localhost:11434).
    #[arg(long, value_name = "URL")]
    pub ollama_url: Option<String>,
    /// Store the program as a workspace template now (if it runs ok),
    /// instead of after `[inference] promote_after` successes.
    #[arg(long)]
    pub promote: bool,
}

/// Exit status for usage and configuration errors.
const EXIT_USAGE: i32 = 3;

/// Run the subcommand.
pub fn main(args: Args) -> anyhow::Result<i32> {
    let (out, code) = delegate_json(&args);
    if code == EXIT_USAGE && args.json {
        // Usage and config errors also go to stderr, like other subcommands.
        let msg = out
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or("");
        eprintln!("lackpy delegate: {}", printable(msg));
    }
    if args.json {
        println!("{}", serde_json::to_string(&out)?);
    } else {
        print_human(&out);
    }
    Ok(code)
}

fn usage_error(msg: String) -> (Value, i32) {
    let e = common::CliError::Usage(msg).info();
    (failed(&e, None), EXIT_USAGE)
}

fn failed(e: &ErrorInfo, d: Option<&Delegation>) -> Value {
    json!({
        "ok": false,
        "value": null,
        "repr": null,
        "stdout": "",
        "grade": null,
        "trace": [],
        "error": e,
        "program": d.and_then(|d| d.program.clone()),
        "provider": d.and_then(|d| d.provider.clone()),
        "attempts": d.map(|d| json!(d.attempts)).unwrap_or_else(|| json!([])),
    })
}

/// The whole command as data: the JSON object and the exit status. Also the
/// entry point for front ends (the MCP `delegate` tool).
pub fn delegate_json(args: &Args) -> (Value, i32) {
    let loaded = match common::load(&args.select) {
        Ok(l) => l,
        Err(e) => return (failed(&e.info(), None), EXIT_USAGE),
    };
    let mut config = match InferenceConfig::from_toml(&loaded.config.inference_document()) {
        Ok(c) => c,
        Err(e) => return usage_error(format!("config error: {e}")),
    };
    config.apply_flags(args.model.as_deref(), args.ollama_url.as_deref());
    let templates = match TemplateSet::load(Some(&loaded.workspace)) {
        Ok(t) => t,
        Err(e) => return usage_error(format!("templates: {e}")),
    };
    let corpus = match Corpus::shipped() {
        Ok(c) => c,
        Err(e) => {
            let e = ErrorInfo::new(
                lackpy_policy::wire::ErrorKind::Internal,
                "CorpusBroken",
                e.to_string(),
            );
            return (failed(&e, None), 4);
        }
    };
    // Only tools that can be called here are shown to the model: a virtual
    // tool with no host to supply it would only produce a failing program.
    let tools: Vec<ToolDoc> = loaded
        .profile
        .tools
        .iter()
        .filter(|(_, spec)| lackpy_supervisor::providers::available(spec))
        .map(|(alias, spec)| ToolDoc::from_spec(alias, spec))
        .collect();
    let ns = loaded.profile.namespace();
    let limits = loaded.profile.limits.clone();
    let validate = |p: &str| lackpy_policy::validate(p, &ns, &limits).map(|_| ());
    let env = |k: &str| std::env::var(k).ok();
    let delegator = Delegator {
        config: &config,
        tools: &tools,
        templates: &templates,
        corpus: &corpus,
        env: &env,
        validate: &validate,
    };
    let mut caller = model_caller();
    let d = delegator.delegate(&args.intent, caller.as_mut());
    let Some(program) = d.program.clone() else {
        let e = d
            .error
            .clone()
            .unwrap_or_else(|| lackpy_inferencer::pipeline::inference_error("no program"));
        let code = e.exit_code();
        return (failed(&e, Some(&d)), code);
    };
    let jail_level = match common::jail_level(&loaded.config) {
        Ok(l) => l,
        Err(e) => {
            let info = ErrorInfo::new(
                lackpy_policy::wire::ErrorKind::Validation,
                "ConfigError",
                e.to_string(),
            );
            return (failed(&info, Some(&d)), e.exit_code());
        }
    };
    let sup = match SupervisorConfig::new().and_then(|mut c| {
        c.jail_level = jail_level;
        c.trace_limits = loaded.config.trace.unwrap_or_default();
        Supervisor::new(c)
    }) {
        Ok(s) => s,
        Err(e) => {
            let e = ErrorInfo::new(
                lackpy_policy::wire::ErrorKind::Internal,
                "SupervisorFailed",
                e.to_string(),
            );
            return (failed(&e, Some(&d)), 4);
        }
    };
    let report = sup.run(RunRequest {
        source: program.clone().into_bytes(),
        profile: loaded.profile.clone(),
        workspace: loaded.workspace.clone(),
        limits: loaded.profile.limits.clone(),
    });
    let code = report.exit_code();
    if report.ok {
        let provider = d.provider.clone().unwrap_or_default();
        match lackpy_inferencer::record_success(
            &loaded.workspace,
            &args.intent,
            &program,
            &provider,
            config.promote_after,
            args.promote,
        ) {
            Ok(r) => tracing::info!(?r, "ratchet"),
            Err(e) => eprintln!(
                "lackpy delegate: warning: could not record the success for the ratchet: {e}"
            ),
        }
    }
    let mut out = serde_json::to_value(&report).unwrap_or_else(|_| json!({}));
    if let Value::Object(m) = &mut out {
        m.insert("program".into(), json!(program));
        m.insert("provider".into(), json!(d.provider));
        m.insert("attempts".into(), json!(d.attempts));
    }
    (out, code)
}

/// How model calls are made: each in a fresh jailed inferencer worker.
/// `LACKPY_INFERENCE_IN_PROCESS=1` makes them in this process instead (a
/// debugging aid for kernels without the jail; never the default).
fn model_caller() -> Box<dyn ModelCaller> {
    if std::env::var_os("LACKPY_INFERENCE_IN_PROCESS").is_some_and(|v| v == "1") {
        return Box::new(lackpy_inferencer::InProcess);
    }
    match ExeHandle::current() {
        Ok(exe) => Box::new(JailedCaller { exe }),
        Err(e) => Box::new(Broken(format!("cannot open the lackpy executable: {e}"))),
    }
}

/// A caller that always fails (the worker cannot be started at all).
struct Broken(String);

impl ModelCaller for Broken {
    fn call(&mut self, _req: &Request) -> Result<Generation, InferError> {
        Err(InferError::Worker(self.0.clone()))
    }
}

/// Runs each model call in a single-use jailed `__worker inferencer`.
pub struct JailedCaller {
    exe: ExeHandle,
}

/// Slack on top of the model call's own worst case before the worker is
/// killed. Why: jailing and the IPC take milliseconds; a worker that takes
/// longer than its own timeouts plus this is wedged.
const WORKER_SLACK: Duration = Duration::from_secs(3);

impl ModelCaller for JailedCaller {
    fn call(&mut self, req: &Request) -> Result<Generation, InferError> {
        let shown = lackpy_inferencer::http::display_url(&req.endpoint.url);
        let url = Url::parse(&req.endpoint.url).map_err(|detail| InferError::BadRequest {
            url: shown.clone(),
            detail,
        })?;
        // Resolve here: the jail has no resolver files. Prefer IPv4 (Ollama
        // listens on 127.0.0.1 while "localhost" may resolve to ::1 first).
        let addr = match req.endpoint.pinned_addr {
            Some(a) => a,
            None => {
                let addrs = client::resolve(&url).map_err(|detail| InferError::Unreachable {
                    url: shown.clone(),
                    detail: format!("cannot resolve {}: {detail}", url.host),
                })?;
                addrs
                    .iter()
                    .find(|a| a.is_ipv4())
                    .or(addrs.first())
                    .copied()
                    .ok_or_else(|| InferError::Unreachable {
                        url: shown.clone(),
                        detail: format!("{} has no address", url.host),
                    })?
            }
        };
        let mut req = req.clone();
        req.endpoint.pinned_addr = Some(addr);
        let ep = &req.endpoint;
        let tries = u64::from(ep.retries) + 1;
        let budget = Duration::from_millis(ep.timeout_ms.saturating_mul(tries))
            + lackpy_inferencer::http::MAX_BACKOFF * ep.retries
            + WORKER_SLACK;
        let spec =
            lackpy_inferencer::worker::jail_spec(addr.port(), budget.as_secs().saturating_add(1));
        let worker_err = |m: String| InferError::Worker(m);
        let mut w = spawn::spawn(&self.exe, "inferencer", &[], &spec)
            .map_err(|e| worker_err(format!("cannot spawn: {e}")))?;
        let ready_by = Instant::now() + lackpy_supervisor::READY_TIMEOUT;
        match w.greeting(ready_by) {
            Ok(Greeting::Ready) => {}
            Ok(Greeting::SetupFailed {
                step,
                errno,
                detail,
            }) => {
                w.kill_and_reap();
                return Err(worker_err(format!(
                    "jail step {step} failed (errno {errno}): {detail}"
                )));
            }
            Err(e) => {
                let st = w.kill_and_reap();
                return Err(worker_err(format!(
                    "no greeting: {e}{}",
                    death(st.as_ref())
                )));
            }
        }
        let deadline = Instant::now() + budget;
        let msg = ToInferencer::Generate {
            protocol: INFERENCER_PROTOCOL,
            request: req.clone(),
        };
        if let Err(e) = w.chan.send(&msg, Some(deadline)) {
            let st = w.kill_and_reap();
            return Err(worker_err(format!(
                "cannot send the request: {e}{}",
                death(st.as_ref())
            )));
        }
        let reply = w.chan.recv::<FromInferencer>(Some(deadline));
        let st = w
            .reap_by(Instant::now() + Duration::from_millis(200))
            .or_else(|| w.kill_and_reap());
        match reply {
            Ok(FromInferencer::Generated(r)) => r,
            Err(e) => Err(worker_err(format!("no answer: {e}{}", death(st.as_ref())))),
        }
    }
}

fn death(st: Option<&std::process::ExitStatus>) -> String {
    match st.and_then(spawn::death_signal) {
        Some(sig) if sig == libc_sigsys() => {
            " (killed by the seccomp filter: a syscall outside the inferencer allowlist)".into()
        }
        Some(sig) => format!(" (killed by signal {sig})"),
        None => st
            .and_then(|s| s.code())
            .map_or(String::new(), |c| format!(" (exit status {c})")),
    }
}

/// SIGSYS (31 on Linux).
fn libc_sigsys() -> i32 {
    31
}

fn print_human(out: &Value) {
    use std::io::Write;
    let mut so = std::io::stdout().lock();
    if let Some(r) = out.get("repr").and_then(Value::as_str) {
        let _ = writeln!(so, "{r}");
    }
    if let Some(s) = out
        .get("stdout")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        let _ = so.write_all(s.as_bytes());
        if !s.ends_with('\n') {
            let _ = writeln!(so);
        }
    }
    let _ = so.flush();
    let provider = out.get("provider").and_then(Value::as_str).unwrap_or("-");
    let program = out.get("program").and_then(Value::as_str);
    if let Some(p) = program {
        eprintln!("-- program (from {provider}):");
        for line in p.lines() {
            let shown = printable(line);
            eprintln!("   | {shown}");
        }
    }
    if let Some(attempts) = out.get("attempts").and_then(Value::as_array) {
        for a in attempts {
            if let Some(e) = a.get("error").filter(|e| !e.is_null()) {
                eprintln!(
                    "-- attempt {}: {}: {}",
                    printable(a.get("provider").and_then(Value::as_str).unwrap_or("?")),
                    printable(e.get("type").and_then(Value::as_str).unwrap_or("?")),
                    printable(e.get("message").and_then(Value::as_str).unwrap_or(""))
                );
            }
        }
    }
    if let Some(e) = out.get("error").filter(|e| !e.is_null()) {
        if let Ok(info) = serde_json::from_value::<ErrorInfo>(e.clone()) {
            eprint!(
                "error: {}",
                common::render_error(program.unwrap_or(""), &info)
            );
        }
    }
}

/// Model and endpoint text for a terminal: the one escaping function
/// (control, format and bidi characters shown escaped).
fn printable(s: &str) -> String {
    super::escape::line(s).into_owned()
}
