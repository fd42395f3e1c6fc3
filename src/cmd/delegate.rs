//! `lackpy delegate "INTENT" [--profile NAME | --tools a,b] [--workspace DIR]
//! [--json] [--model M] [--ollama-url U] [--promote]`: turn an intent into
//! a program (templates → rules → models, see `lackpy_inferencer`), validate
//! it, and run it through the supervisor's jailed executor.
//!
//! With `--json`, stdout carries one object: the run contract object plus
//! `"program"`, `"provider"`, `"attempts": [{"provider", "raw",
//! "program", "error", "duration_ms", "prompt_tokens"?}]`, `"run_id"` (the
//! handle for the MCP `confirm_result` tool), `"rerun_safe"` (false for a
//! program with effects: run once, never re-run or handed on) and, when
//! the ratchet waits for a verdict, `"confirm"`.
//!
//! Exit status: as `lackpy run` once a program ran (0 ok, 1 runtime/tool/
//! limit, 4 internal). When no provider produced a valid program: 2 if some
//! provider answered with a program that failed validation (the error is
//! the last validation error, its message prefixed "no provider produced a
//! valid program"); 1 if no provider produced a program at all (model
//! unreachable, timed out, garbage; error kind `tool`, type
//! `InferenceFailed`, naming each provider's URL and reason); 3 for usage
//! and configuration errors.

use super::common::{self, Loaded, Select};
use lackpy_inferencer::corpus::Corpus;
use lackpy_inferencer::pipeline::{
    Delegation, Delegator, ListShape, ModelCaller, RunCheck, ValueShape,
};
use lackpy_inferencer::templates::{Ratchet, RatchetPolicy};
use lackpy_inferencer::worker::{FromInferencer, ToInferencer, INFERENCER_PROTOCOL};
use lackpy_inferencer::{Generation, InferError, Request};
use lackpy_inferencer::{InferenceConfig, TemplateSet, ToolDoc};
use lackpy_policy::wire::{ErrorInfo, ErrorKind};
use lackpy_supervisor::providers::Providers;
use lackpy_supervisor::spawn::{self, ExeHandle};
use lackpy_supervisor::{RunReport, RunRequest, Supervisor, SupervisorConfig};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::sync::Arc;
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

/// A usage or configuration error as the command's object and status.
pub(crate) fn usage_error(msg: String) -> (Value, i32) {
    let e = common::CliError::Usage(msg).info();
    (failed(&e, None), EXIT_USAGE)
}

/// A delegation that could not start for an internal reason (`ty`): its
/// object and exit status 4.
fn internal_failure(ty: &str, e: impl std::fmt::Display) -> (Value, i32) {
    let info = ErrorInfo::new(ErrorKind::Internal, ty, e.to_string());
    (failed(&info, None), 4)
}

fn failed(e: &ErrorInfo, d: Option<&Delegation>) -> Value {
    let mut v = crate::mcp::backend::failed_run(e.clone());
    if let Value::Object(m) = &mut v {
        m.insert("program".into(), json!(d.and_then(|d| d.program.clone())));
        m.insert("provider".into(), json!(d.and_then(|d| d.provider.clone())));
        m.insert(
            "attempts".into(),
            d.map(|d| json!(d.attempts)).unwrap_or_else(|| json!([])),
        );
    }
    v
}

/// The whole command as data: the JSON object and the exit status (a
/// supervisor of its own, made for this one delegation; front ends that
/// have one call [`delegate_with`]).
pub fn delegate_json(args: &Args) -> (Value, i32) {
    let providers = Arc::new(Providers::new());
    let loaded = match common::load(&args.select, &providers) {
        Ok(l) => l,
        Err(e) => return (failed(&e.info(), None), EXIT_USAGE),
    };
    let jail_level = match common::jail_level(&loaded.config) {
        Ok(l) => l,
        Err(e) => {
            let info = ErrorInfo::new(ErrorKind::Validation, "ConfigError", e.to_string());
            return (failed(&info, None), e.exit_code());
        }
    };
    let sup = match SupervisorConfig::new().and_then(|mut c| {
        c.jail_level = jail_level;
        c.trace_limits = loaded.config.trace.unwrap_or_default();
        Supervisor::with_providers(c, providers)
    }) {
        Ok(s) => s,
        Err(e) => return internal_failure("SupervisorFailed", e),
    };
    let opts = Options {
        model: args.model.as_deref(),
        ollama_url: args.ollama_url.as_deref(),
        promote: args.promote,
    };
    delegate_with(&sup, &loaded, &args.intent, &opts)
}

/// What a delegation's caller may choose besides the intent.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options<'a> {
    /// `--model`: this model instead of the configured model providers.
    pub model: Option<&'a str>,
    /// `--ollama-url`.
    pub ollama_url: Option<&'a str>,
    /// `--promote`: store the program as a template now if it runs ok.
    pub promote: bool,
}

/// Delegate `intent` in `loaded` (its workspace, config and resolved
/// profile, whose MCP servers `sup`'s providers started) and run the
/// program with `sup` (its warm pool, its traces): the JSON object of
/// `lackpy delegate --json` and its exit status. The MCP `delegate` tool
/// calls this with the server's own supervisor.
pub fn delegate_with(
    sup: &Supervisor,
    loaded: &Loaded,
    intent: &str,
    opts: &Options<'_>,
) -> (Value, i32) {
    let mut config = match loaded.config.inference.resolve() {
        Ok(c) => c,
        Err(e) => return usage_error(format!("config error: {e}")),
    };
    config.apply_flags(opts.model, opts.ollama_url);
    let profile_name = loaded.profile.name.clone();
    let templates = match TemplateSet::load_for(Some(&loaded.workspace), &profile_name) {
        Ok(t) => t,
        Err(e) => return usage_error(format!("templates: {e}")),
    };
    let corpus = match Corpus::shipped() {
        Ok(c) => c,
        Err(e) => return internal_failure("CorpusBroken", e),
    };
    // Only tools that can be called here are shown to the model: a virtual
    // tool with no host to supply it would only produce a failing program.
    let tools: Vec<ToolDoc> = loaded
        .profile
        .tools
        .iter()
        .filter(|(_, spec)| sup.providers().available(spec))
        .map(|(alias, spec)| ToolDoc::from_spec(alias, spec))
        .collect();
    let ns = loaded.profile.namespace();
    let limits = loaded.profile.limits.clone();
    let validate = |p: &str| lackpy_policy::validate(p, &ns, &limits).map(|_| ());
    let env = |k: &str| std::env::var(k).ok();
    let run = |program: &str| {
        sup.run(RunRequest {
            source: program.as_bytes().to_vec(),
            profile: loaded.profile.clone(),
            workspace: loaded.workspace.clone(),
            limits: loaded.profile.limits.clone(),
        })
    };
    // The workspace view for prompts (only providers whose
    // `workspace_context` allows it get it; see lackpy_inferencer::context).
    let context = config
        .order
        .iter()
        .any(|p| p.plugin.is_model())
        .then(|| lackpy_inferencer::context::workspace_context(&loaded.workspace, intent))
        .flatten();
    // Programs without write effects run as soon as they validate, so a
    // failure moves the cascade on; a program with effects is accepted
    // unrun and runs once below, never again automatically.
    // Every program run so far, newest last: the cascade may settle on an
    // earlier one (a cell with an empty value kept after a retry that did
    // no better). A handful per provider at most.
    let runs: RefCell<Vec<(String, RunReport)>> = RefCell::new(Vec::new());
    let run_check = |program: &str| -> RunCheck {
        let grade = match lackpy_policy::validate(program, &ns, &limits) {
            Ok(p) => p.grade,
            Err(_) => return RunCheck::Accept,
        };
        if grade.d > RERUN_MAX_EFFECTS {
            return RunCheck::Accept;
        }
        let report = run(program);
        let verdict = match (&report.ok, &report.error) {
            (true, _) => match empty_value(&report.value) {
                Some(shown) => RunCheck::Empty(shown.into()),
                None => RunCheck::Value(value_shape(&report.value)),
            },
            (false, Some(e)) if e.kind != ErrorKind::Internal => RunCheck::Failed(e.clone()),
            _ => RunCheck::Accept,
        };
        runs.borrow_mut().push((program.to_string(), report));
        verdict
    };
    let mut delegator = Delegator::new(&config, &tools, &templates, &corpus, &env, &validate);
    delegator.context = context.as_deref();
    delegator.run = Some(&run_check);
    let mut caller = model_caller();
    let d = delegator.delegate(intent, caller.as_mut());
    let mut runs = runs.into_inner();
    let ran = d
        .program
        .as_ref()
        .and_then(|p| runs.iter().rposition(|(r, _)| r == p))
        .map(|i| runs.swap_remove(i));
    let last = ran.or_else(|| runs.pop());
    let (program, report, effects) = match (d.program.clone(), last) {
        (Some(p), Some((ran, report))) if ran == p => (p, report, false),
        (Some(p), _) => {
            let report = run(&p);
            (p, report, true)
        }
        // Every program that validated failed at run time: report the last run.
        (None, Some((ran, report))) => (ran, report, false),
        (None, None) => {
            let e = d
                .error
                .clone()
                .unwrap_or_else(|| lackpy_inferencer::pipeline::inference_error("no program"));
            let code = e.exit_code();
            return (failed(&e, Some(&d)), code);
        }
    };
    let code = report.exit_code();
    let provider = d.provider.clone().unwrap_or_else(|| {
        d.attempts
            .iter()
            .rev()
            .find(|a| a.program.as_deref() == Some(program.as_str()))
            .map(|a| a.provider.clone())
            .unwrap_or_default()
    });
    let policy = RatchetPolicy {
        promote_after: config.promote_after,
        count_unconfirmed: config.promote_unconfirmed,
        force: opts.promote,
    };
    let outcome = lackpy_inferencer::templates::record_result(
        &loaded.workspace,
        intent,
        &profile_name,
        &program,
        &provider,
        report.ok,
        &report.run_id,
        policy,
    );
    let ratchet = match outcome {
        Ok(r) => {
            tracing::info!(?r, "ratchet");
            Some(r)
        }
        Err(e) => {
            eprintln!("lackpy delegate: warning: could not record the result for the ratchet: {e}");
            None
        }
    };
    // Surrogate mode: a value holding a lone surrogate is null with a
    // warning, as in `lackpy run --json` (strict JSON).
    let mut report = report;
    if report.surrogates {
        lackpy_supervisor::json::null_surrogate_value(&mut report.value, &mut report.warnings);
    }
    let mut out = serde_json::to_value(&report).unwrap_or_else(|_| json!({}));
    if let Value::Object(m) = &mut out {
        m.insert("program".into(), json!(program));
        m.insert("provider".into(), json!(provider));
        m.insert("attempts".into(), json!(d.attempts));
        if effects && !report.ok {
            if let Some(Value::Object(e)) = m.get_mut("error") {
                e.insert(
                    "hint".into(),
                    json!("the program has effects, so it was run once and not re-run or passed to another provider; check the workspace before trying again"),
                );
            }
        }
        m.insert("rerun_safe".into(), json!(!effects));
        // The handle for confirm_result (also the trace's id).
        m.insert("run_id".into(), json!(report.run_id));
        if let Some(Ratchet::Pending) = ratchet {
            m.insert("confirm".into(), json!("pending: confirm or reject this result by its run_id (MCP tool confirm_result) so the ratchet can learn from it"));
        }
    }
    (out, code)
}

/// The calling agent's verdict on a delegate result, by its run id (the
/// MCP `confirm_result` tool): counted towards promotion when `correct`,
/// otherwise the count is reset and a template promoted for the intent is
/// removed. `{"ok": true, "ratchet": ...}`, or a failure for an unknown or
/// malformed run id.
pub fn confirm_json(workspace: &std::path::Path, run_id: &str, correct: bool) -> Value {
    let bad = |ty: &str, msg: String| {
        let e = ErrorInfo::new(ErrorKind::Validation, ty, msg);
        json!({"ok": false, "error": e})
    };
    if run_id.is_empty()
        || run_id.len() > 128
        || !run_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return bad(
            "BadRunId",
            "run_id must be the run_id of a delegate result".into(),
        );
    }
    // Only the config is needed (no profile, no MCP server).
    let promote_after = common::load_files(workspace)
        .ok()
        .and_then(|(config, _)| config.inference.resolve().ok())
        .map_or(InferenceConfig::default().promote_after, |c| {
            c.promote_after
        });
    match lackpy_inferencer::templates::confirm(workspace, run_id, correct, promote_after) {
        Ok(Some(r)) => {
            let what = match r {
                Ratchet::Counted(n) => format!("counted ({n} of {promote_after} before promotion)"),
                Ratchet::Promoted => "promoted to a workspace template".into(),
                Ratchet::Reset(true) => "count reset; the promoted template was removed".into(),
                Ratchet::Reset(false) => "count reset".into(),
                Ratchet::Pending | Ratchet::Skipped => "not counted (promote_after = 0)".into(),
            };
            json!({"ok": true, "run_id": run_id, "correct": correct, "ratchet": what})
        }
        Ok(None) => bad(
            "UnknownRun",
            format!("no delegate result waits for a verdict under run_id {run_id:?} (unknown, already judged, or too old)"),
        ),
        Err(e) => {
            let e = ErrorInfo::new(ErrorKind::Internal, "RatchetFailed", e.to_string());
            json!({"ok": false, "error": e})
        }
    }
}

/// How an empty value of a run shows (`None`, `[]`, `{}`, `""`, `0`), or
/// `None` when the value is not empty. `False` is an answer, not emptiness.
fn empty_value(v: &Value) -> Option<&'static str> {
    match v {
        Value::Null => Some("None"),
        Value::Array(a) if a.is_empty() => Some("[]"),
        Value::Object(o) if o.is_empty() => Some("{}"),
        Value::String(s) if s.is_empty() => Some("\"\""),
        Value::Number(n) if n.as_f64() == Some(0.0) => Some("0"),
        _ => None,
    }
}

/// The shape of a run's value (no content), for the check of what the
/// task asks for (`lackpy_inferencer::pipeline::shape_mismatch`).
fn value_shape(v: &Value) -> ValueShape {
    match v {
        Value::Number(_) => ValueShape::Number,
        Value::String(t) => ValueShape::Str {
            // One line only: a file's text ends in a newline, rightly.
            padded: !t.contains('\n') && t.trim() != t && !t.trim().is_empty(),
        },
        Value::Bool(_) => ValueShape::Bool,
        Value::Array(a) => {
            // Every item has it, and there is one at least.
            let every = |f: &dyn Fn(&Value) -> bool| !a.is_empty() && a.iter().all(f);
            ValueShape::List(ListShape {
                len: a.len(),
                records_with_file: every(&|x| {
                    x.as_object().is_some_and(|o| o.contains_key("file"))
                }),
                pairs: every(&|x| x.as_array().is_some_and(|p| p.len() == 2)),
                texts: every(&|x| x.as_str().is_some_and(|t| t.trim_end().contains('\n'))),
                numbers_as_text: every(&|x| x.as_str().is_some_and(is_number_text)),
                split_rows: every(&|x| {
                    x.as_array()
                        .is_some_and(|r| r.len() >= 2 && r.iter().all(Value::is_string))
                }),
                table_lines: every(&|x| x.as_str().is_some_and(is_table_line)),
            })
        }
        Value::Object(o) => ValueShape::Dict {
            all_bool: !o.is_empty() && o.values().all(Value::is_boolean),
        },
        Value::Null => ValueShape::Other,
    }
}

/// One line of a table, unsplit: a tab, or two commas or more with no
/// whitespace after any (prose puts a space after its commas).
fn is_table_line(t: &str) -> bool {
    if t.contains('\n') {
        return false;
    }
    if t.contains('\t') {
        return true;
    }
    t.matches(',').count() >= 2
        && !t
            .split(',')
            .skip(1)
            .any(|field| field.starts_with(char::is_whitespace))
}

/// A str that is a number written out (`"14"`, `"-2.50"`), not `"nan"`,
/// `"inf"` or a version like `"0.3.0"`.
fn is_number_text(t: &str) -> bool {
    let t = t.trim();
    t.chars().any(|c| c.is_ascii_digit()) && t.parse::<f64>().is_ok()
}

/// Highest effects grade (`d`) of a program that is run as soon as it
/// validates and, when it fails, handed on to the next provider: the
/// shipped read tools' ceiling. Why: reading and finding change nothing,
/// so running such a program again (another provider's version) is safe;
/// anything that writes runs once.
const RERUN_MAX_EFFECTS: u8 = 1;

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
        // Resolve here: the jail has no resolver files; the worker connects
        // only to this address (IPv4 first: Ollama listens on 127.0.0.1
        // while "localhost" may resolve to ::1 first).
        let addr = match req.endpoint.pinned_addr {
            Some(a) => a,
            None => {
                let addrs = lackpy_inferencer::http::resolve(&req.endpoint.url)?;
                addrs
                    .first()
                    .copied()
                    .ok_or_else(|| InferError::Unreachable {
                        url: lackpy_inferencer::http::display_url(&req.endpoint.url),
                        detail: "the host has no address".into(),
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
        if let Err(e) = lackpy_supervisor::greet(&mut w) {
            let hint = e.hint.map(|h| format!("; hint: {h}")).unwrap_or_default();
            return Err(worker_err(format!("{}{hint}", e.message)));
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn value_shapes() {
        let padded = |v: Value| matches!(value_shape(&v), ValueShape::Str { padded: true });
        assert!(padded(json!(" Returns policy")));
        assert!(padded(json!("x\t")));
        assert!(!padded(json!("a file's text\n")));
        assert!(!padded(json!("  ")));
        assert!(!padded(json!("plain")));
        assert_eq!(
            value_shape(&json!([["a", 1], ["b", 2]])),
            ValueShape::List(ListShape {
                len: 2,
                pairs: true,
                ..ListShape::default()
            })
        );
        assert_eq!(
            value_shape(&json!([["a", 1], ["b"]])),
            ValueShape::List(ListShape {
                len: 2,
                ..ListShape::default()
            })
        );
        assert_eq!(
            value_shape(&json!({"a": true, "b": false})),
            ValueShape::Dict { all_bool: true }
        );
        assert_eq!(
            value_shape(&json!({"a": true, "b": 1})),
            ValueShape::Dict { all_bool: false }
        );
        assert_eq!(
            value_shape(&json!({})),
            ValueShape::Dict { all_bool: false }
        );
        let rows = |v: Value| {
            matches!(
                value_shape(&v),
                ValueShape::List(ListShape {
                    split_rows: true,
                    ..
                })
            )
        };
        assert!(rows(json!([["M-04", "mug", "52"], ["L-01", "lamp"]])));
        let table = |v: Value| {
            matches!(
                value_shape(&v),
                ValueShape::List(ListShape {
                    table_lines: true,
                    ..
                })
            )
        };
        assert!(table(json!(["hinge,1.75,40", "bolt,0.10,500"])));
        assert!(table(json!(["Brightco\tDE"])));
        assert!(!table(json!(["red, green, blue"])));
        assert!(!table(json!(["a,b"])));
        assert!(!table(json!(["hinge,1.75,40", "note"])));
        assert!(!table(json!(["a,b,c\nd,e,f"])));
        assert!(!table(json!([])));
        assert!(!rows(json!([["a", 1], ["b", "c"]])));
        assert!(!rows(json!([["a"], ["b", "c"]])));
        assert!(!rows(json!(["a,b", "c,d"])));
        assert!(!rows(json!([])));
        let texts = |v: Value| {
            matches!(
                value_shape(&v),
                ValueShape::List(ListShape { texts: true, .. })
            )
        };
        assert!(texts(json!(["a\nb\n", "c\nd"])));
        assert!(!texts(json!(["one line\n", "c\nd"])));
        assert!(!texts(json!([])));
        let numbers = |v: Value| {
            matches!(
                value_shape(&v),
                ValueShape::List(ListShape {
                    numbers_as_text: true,
                    ..
                })
            )
        };
        assert!(numbers(json!(["14"])));
        assert!(numbers(json!([" 2.50"])));
        assert!(!numbers(json!(["0.3.0"])));
        assert!(!numbers(json!([14])));
        assert!(!numbers(json!(["nan"])));
    }
}
