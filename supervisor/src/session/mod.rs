//! The protocol of one run: the supervisor's side of the conversation
//! with a worker, from the `Run` frame to `Done` (or the worker's death,
//! the deadline, a cancel, a violation). Every `ToolCall` passes
//! [`authorize`] before any provider runs; see `authorize.rs`.

mod authorize;

pub use authorize::*;

use crate::death::{classify_death, internal, limit};
use crate::providers::{Providers, RunContext, WriteBudget};
use crate::spawn::Worker;
use crate::{freezer, json, tools, trace, RunOptions, RunReport, RunRequest, CANCEL_POLL_MS};
use lackpy_policy::wire::{
    Data, ErrorInfo, ErrorKind, FlatData, FromWorker, ToWorker, ToolFailure, ToolSig,
    MAX_DATA_DEPTH, PROTOCOL_VERSION,
};
use lackpy_worker::ipc::{FrameError, SpinWait};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use trace::TraceEntry;

/// How long the supervisor polls for a worker's next frame before it sleeps.
/// Why 50 µs: a program between two tool calls usually computes for less;
/// longer computations cost the supervisor this much CPU once per frame.
const FRAME_SPIN: Duration = Duration::from_micros(50);

/// A run still computing after this long is demoted to the lowest CPU
/// priority. Why 20 ms: typical runs finish in well under a millisecond;
/// a program still busy after 20 ms is long-running, and its latency
/// matters less than everyone else's.
const DEMOTE_AFTER: Duration = Duration::from_millis(20);

/// How long to watch for frames sent after `Done` (ms), after a
/// [`FRAME_SPIN`] poll found neither a frame nor EOF.
/// Why: a well-behaved worker closes its socket right after `Done` (EOF ends
/// the wait at once); a hostile one that keeps talking is caught instead of
/// ignored.
const AFTER_DONE_WAIT_MS: i32 = 20;

/// One run's conversation with its worker.
pub(crate) struct Session<'a, 't> {
    /// Runs the calls [`authorize`] accepts.
    providers: &'a Providers,
    /// The run's deadline and cancel flag, for providers.
    run: RunContext,
    req: &'a RunRequest,
    ws: &'a tools::fs::Workspace,
    report: &'a mut RunReport,
    worker: &'a mut Worker,
    deadline: Instant,
    calls: u64,
    cancel: Option<&'a Arc<AtomicBool>>,
    want_vars: bool,
    /// When the run was handed to the worker.
    started: Instant,
    /// Freezes this run's worker while it is demoted (its CPU priority
    /// lowered once it computed past [`DEMOTE_AFTER`]) and others run.
    token: &'a mut freezer::RunToken<'t>,
    /// Bounds what this run's trace entries keep.
    budget: trace::RunBudget,
    /// The declared argument types of the profile's tools, parsed once per
    /// run (see [`authorize_with`]).
    types: DeclaredTypes,
    /// What the run's builtin writes may still write (`write_bytes`);
    /// shared with the providers through `run`.
    writes: Arc<WriteBudget>,
}

pub(crate) enum Step {
    Continue,
    Finished,
}

impl<'a, 't> Session<'a, 't> {
    /// The session of run `req` on `worker`, its wall-clock deadline
    /// starting now.
    pub(crate) fn new(
        req: &'a RunRequest,
        opts: &'a RunOptions,
        ws: &'a tools::fs::Workspace,
        report: &'a mut RunReport,
        worker: &'a mut Worker,
        token: &'a mut freezer::RunToken<'t>,
        sup: &'a crate::Supervisor,
    ) -> Self {
        let now = Instant::now();
        let deadline = now + Duration::from_millis(req.limits.wall_ms);
        let writes = Arc::new(WriteBudget::new(req.limits.write_bytes));
        Session {
            providers: sup.providers(),
            run: RunContext::new(deadline, opts.cancel.clone()).with_writes(Arc::clone(&writes)),
            req,
            ws,
            report,
            worker,
            deadline,
            calls: 0,
            cancel: opts.cancel.as_ref(),
            want_vars: opts.want_vars,
            started: now,
            token,
            budget: trace::RunBudget::new(&sup.trace_limits()),
            types: DeclaredTypes::new(&req.profile),
            writes,
        }
    }

    /// Check and keep the variables a worker reported: names a program
    /// could assign, well-formed data, `result_bytes` in total.
    fn take_vars(
        &mut self,
        globals: &[(String, FlatData)],
        skipped: Vec<String>,
    ) -> Result<(), ErrorInfo> {
        let ns = self.req.profile.namespace();
        let cap = self.req.limits.result_bytes;
        let mut total = 0u64;
        let mut vars = Vec::with_capacity(globals.len());
        for (name, flat) in globals {
            if !lackpy_policy::lang::is_predefinable(name, &ns) {
                return Err(self.violation(format!("reported a variable named {name:?}")));
            }
            total = total
                .saturating_add(flat.0.iter().map(node_bytes).sum::<u64>())
                .saturating_add(name.len() as u64);
            if total > cap.saturating_mul(2) {
                return Err(self.violation("reported variables beyond the size bound".into()));
            }
            match Data::from_flat(flat, MAX_DATA_DEPTH) {
                Ok(d) => vars.push((name.clone(), d)),
                Err(e) => return Err(self.violation(format!("malformed variable {name}: {e}"))),
            }
        }
        self.report.vars = Some(vars);
        self.report.skipped_vars = skipped;
        Ok(())
    }

    pub(crate) fn drive(&mut self, run: &ToWorker) {
        self.worker.chan.set_spin(FRAME_SPIN, SpinWait::Yield);
        if let Err(e) = self.worker.chan.send(run, Some(self.deadline)) {
            self.report.error = Some(self.frame_error(e));
            return;
        }
        // Set once the channel reported an end and the worker's exit was
        // awaited: a second end is final.
        let mut drained = false;
        loop {
            if let Err(e) = self.wait_or_cancel() {
                self.report.error = Some(e);
                return;
            }
            let msg = match self.worker.chan.recv::<FromWorker>(Some(self.deadline)) {
                Ok(m) => m,
                Err(e @ (FrameError::Closed | FrameError::Io(_))) if !drained => {
                    drained = true;
                    match self.after_end(e) {
                        Some(m) => m,
                        None => return,
                    }
                }
                Err(e) => {
                    self.report.error = Some(self.frame_error(e));
                    return;
                }
            };
            match self.handle(msg) {
                Ok(Step::Continue) => {}
                Ok(Step::Finished) => return,
                Err(e) => {
                    self.report.error = Some(e);
                    return;
                }
            }
        }
    }

    /// A worker that has computed for [`DEMOTE_AFTER`] is demoted: while
    /// other runs are in flight it gets the lowest CPU priority
    /// (`SCHED_IDLE`) or is stopped ([`freezer`]), so a runaway program on a
    /// shared server yields the cores to short runs instead of slowing every
    /// other client down.
    /// CPU time, not wall time, where the worker's clock can be read: a
    /// short run that is merely slow because others crowd the CPUs is not a
    /// runaway, and must not be demoted (and then stopped, see
    /// [`freezer`]) for it.
    fn demote_if_long(&mut self) {
        if self.token.is_demoted() || self.started.elapsed() < DEMOTE_AFTER {
            return;
        }
        if self.worker.cpu_time().is_some_and(|cpu| cpu < DEMOTE_AFTER) {
            return;
        }
        // Kept stopped for at most half the run's wall-clock limit.
        let budget = self.deadline.saturating_duration_since(self.started) / 2;
        self.token
            .demote(self.worker.pidfd_dup(), self.worker.sched_pid(), budget);
    }

    /// With a cancel flag: wait until the worker has something to say (a
    /// frame or a hang-up) or the deadline passes, checking the flag every
    /// [`CANCEL_POLL_MS`]; when it is set, SIGKILL the worker and end.
    fn wait_or_cancel(&mut self) -> Result<(), ErrorInfo> {
        // Without a cancel flag the receive itself spins, then sleeps until
        // the deadline (see `Channel::set_spin` in `drive`).
        let Some(flag) = self.cancel else {
            return Ok(());
        };
        // The worker's next frame (a tool call, Done) often follows within
        // microseconds: poll briefly before sleeping in slices.
        if self.worker.chan.spin_readable(FRAME_SPIN, SpinWait::Yield) {
            return Ok(());
        }
        loop {
            if flag.load(Ordering::SeqCst) {
                self.worker.kill_and_reap();
                let mut e = internal("Cancelled", "the run was cancelled by the client");
                e.hint = Some("the worker was killed; no variables were kept from this run".into());
                return Err(e);
            }
            // Checked every slice: a runaway computes without sending frames.
            self.demote_if_long();
            let slice = if self.token.is_demoted() {
                // A demoted worker may be stopped while others run; see
                // whether it may continue.
                self.token.tick();
                freezer::CHECK_EVERY.as_millis() as i32
            } else {
                CANCEL_POLL_MS
            };
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                // recv reports the timeout.
                return Ok(());
            }
            let wait = i32::try_from(left.as_millis())
                .unwrap_or(i32::MAX)
                .clamp(1, slice);
            let mut pfd = libc::pollfd {
                fd: self.worker.chan.raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: `pfd` is one valid pollfd on a descriptor the channel owns.
            let rc = unsafe { libc::poll(&mut pfd, 1, wait) };
            if rc > 0 {
                // Readable, hung up or errored: recv tells which.
                return Ok(());
            }
            if rc < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return Ok(());
            }
        }
    }

    /// The channel reported its end (`Closed`, or a socket error) between
    /// frames: wait for the worker to exit, then read once more. Every frame
    /// a worker sent before exiting is queued by then, so a `Done` that the
    /// first read missed is still found, and a finished run is not reported
    /// as a dead worker. A run ended twice (`exit status 0` after `Done`)
    /// was seen, rarely, under load, and not reproduced in 14,000 runs; the
    /// message of a death now names what the channel reported, so another
    /// occurrence says more. `None`: the run ended, its error is reported.
    fn after_end(&mut self, e: FrameError) -> Option<FromWorker> {
        let st = self.worker.reap_by(Instant::now() + Duration::from_secs(1));
        if st.is_some_and(|s| s.success()) {
            match self.worker.chan.recv::<FromWorker>(Some(Instant::now())) {
                Ok(m) => {
                    tracing::warn!(
                        first = %e,
                        "a frame arrived after the channel reported its end; the run goes on"
                    );
                    return Some(m);
                }
                Err(again) => tracing::debug!(first = %e, %again, "no frame after the end"),
            }
        }
        // The death as any other (the worker is reaped already, so its
        // status is at hand), naming what the channel said.
        let said = e.to_string();
        let mut info = self.frame_error(e);
        if info.type_name == "WorkerDied" {
            info.message = format!("{} (the channel: {said})", info.message);
        }
        self.report.error = Some(info);
        None
    }

    /// A frame error while a run is in progress.
    fn frame_error(&mut self, e: FrameError) -> ErrorInfo {
        match e {
            FrameError::Timeout => {
                self.worker.kill_and_reap();
                limit(
                    "timeout",
                    format!(
                        "the run exceeded the wall-clock limit of {} ms",
                        self.req.limits.wall_ms
                    ),
                )
            }
            FrameError::Closed | FrameError::Truncated { .. } | FrameError::Io(_) => {
                let st = self.worker.reap_by(Instant::now() + Duration::from_secs(1));
                classify_death(st, &self.req.limits)
            }
            // Only our own send makes this one (data for the worker with
            // more values than it may decode): not the worker's fault.
            e @ FrameError::TooManyValues { .. } => {
                self.worker.kill_and_reap();
                limit("result", e.to_string())
            }
            other => {
                self.worker.kill_and_reap();
                internal("ProtocolViolation", format!("worker killed: {other}"))
            }
        }
    }

    fn violation(&mut self, what: String) -> ErrorInfo {
        self.worker.kill_and_reap();
        internal("ProtocolViolation", format!("worker killed: {what}"))
    }

    fn handle(&mut self, msg: FromWorker) -> Result<Step, ErrorInfo> {
        match msg {
            FromWorker::ToolCall {
                id,
                name,
                args,
                kwargs,
            } => {
                self.calls += 1;
                if id != self.calls {
                    return Err(
                        self.violation(format!("tool call id {id}, expected {}", self.calls))
                    );
                }
                // Borrowed from the request (not from `self`), so no copy.
                let req = self.req;
                let frame = CallFrame {
                    name: &name,
                    args: &args,
                    kwargs: &kwargs,
                };
                let t0 = Instant::now();
                // Every check happens in `authorize`, before any provider
                // runs; the trace shows the call as bound (keywords in their
                // positions) or, when refused, the arguments as decoded.
                let authorized = authorize_with(
                    &req.profile,
                    self.calls,
                    req.limits.tool_calls,
                    frame,
                    &mut self.types,
                );
                let (shown, result) = match authorized {
                    Ok(call) => {
                        // Builtins that run on a confined lane share the
                        // arguments with it (no copy); every provider
                        // gets the run's deadline and cancel flag.
                        let args = Arc::new(call.args);
                        let r =
                            self.providers
                                .call(call.spec, Arc::clone(&args), self.ws, &self.run);
                        (Arc::try_unwrap(args).unwrap_or_else(|a| (*a).clone()), r)
                    }
                    Err(Refusal::Violation(what)) => return Err(self.violation(what)),
                    Err(Refusal::OverBudget { limit: max }) => {
                        self.worker.kill_and_reap();
                        return Err(limit(
                            "tool_calls",
                            format!("the program made more than {max} tool calls"),
                        ));
                    }
                    Err(Refusal::Refused { failure, args }) => (args, Err(failure)),
                };
                let duration_us = t0.elapsed().as_micros() as u64;
                // A call that used up the run's time (its timeout was cut to
                // the deadline) is traced as failed, and the run ends as any
                // run out of time.
                let out_of_time = Instant::now() >= self.deadline;
                let result = if out_of_time {
                    Err(ToolFailure::new(
                        "Timeout",
                        "the run's wall-clock limit was reached",
                    ))
                } else {
                    result
                };
                let (reply, mut entry_err, bytes) = match result {
                    Ok(d) => {
                        let flat = d.to_flat();
                        let bytes = flat.0.iter().map(node_bytes).sum::<u64>();
                        (Ok(flat), None, Some(bytes))
                    }
                    Err(f) => {
                        let msg = format!("{}: {}", f.type_name, f.message);
                        (Err(f), Some(msg), None)
                    }
                };
                // The answer goes back first and the call's trace entry is
                // built after, while the worker is already running again
                // (building it, the arguments' JSON and the budget's bounds,
                // was on every call's round trip). It is kept whatever the
                // send's outcome: this run's report carries it either way.
                // A write refused by the run's write budget ends the run
                // with the `write_bytes` limit (the budget's own flag: no
                // provider's failure can claim it), the call traced failed.
                let over_writes = match &reply {
                    Err(f) if self.writes.exceeded() => Some(f.message.clone()),
                    _ => None,
                };
                let sent = if out_of_time {
                    Err(self.frame_error(FrameError::Timeout))
                } else if let Some(msg) = over_writes {
                    self.worker.kill_and_reap();
                    Err(limit("write_bytes", msg))
                } else {
                    let msg = ToWorker::ToolResult { id, result: reply };
                    let mut sent = self.worker.chan.send(&msg, Some(self.deadline));
                    if let Err(FrameError::TooManyValues { .. }) = sent {
                        // Small on the wire but too many values for the
                        // worker to decode: the call fails, traced as such,
                        // and the program goes on.
                        let f = ToolFailure::new(
                            "TooLarge",
                            format!(
                                "{name}() returned more values than one reply can carry (more than {} bytes of them in memory); ask for less",
                                lackpy_policy::wire::MAX_FRAME_BYTES
                            ),
                        );
                        entry_err = Some(format!("{}: {}", f.type_name, f.message));
                        let msg = ToWorker::ToolResult { id, result: Err(f) };
                        sent = self.worker.chan.send(&msg, Some(self.deadline));
                    }
                    match sent {
                        Ok(()) => Ok(Step::Continue),
                        Err(FrameError::TooLarge { len, max }) => {
                            // The program never gets this result: the call
                            // is traced as failed, not as a success.
                            entry_err = Some(format!(
                                "TooLarge: the result of {len} bytes exceeds the {max}-byte frame limit"
                            ));
                            self.worker.kill_and_reap();
                            Err(limit(
                                "result",
                                format!(
                                    "a tool result of {len} bytes exceeds the {max}-byte frame limit"
                                ),
                            ))
                        }
                        Err(e) => Err(self.frame_error(e)),
                    }
                };
                let error = entry_err.map(|m| self.budget.message(m));
                self.report.trace.push(TraceEntry {
                    tool: name,
                    args: shown.iter().map(|a| self.budget.arg(a)).collect(),
                    ok: error.is_none(),
                    duration_us,
                    error,
                    result_bytes: bytes,
                });
                sent
            }
            FromWorker::Stdout(chunk) => {
                let cap = self.req.limits.stdout_bytes;
                if (self.report.stdout.len() + chunk.len()) as u64 > cap {
                    self.worker.kill_and_reap();
                    return Err(limit(
                        "output",
                        format!("the program printed more than {cap} bytes"),
                    ));
                }
                self.report.stdout.push_str(&chunk);
                Ok(Step::Continue)
            }
            FromWorker::Done(outcome) => {
                // Anything after Done is a violation. A well-behaved worker
                // closes its socket right after Done, so EOF follows within
                // microseconds: poll for it briefly before sleeping. (Sleeping
                // at once put a wake-up, and on a busy machine a wait for a
                // CPU, on every run's path: `lackpy mcp` with a runaway
                // running, 1000 sequential calls, spent p50 44 µs and p99
                // 2.6 ms in this wait.)
                let readable = self.worker.chan.spin_readable(FRAME_SPIN, SpinWait::Yield);
                let wait = if readable { 0 } else { AFTER_DONE_WAIT_MS };
                if self.worker.chan.has_pending(wait) {
                    return Err(self.violation("sent a frame after Done".into()));
                }
                if self.want_vars {
                    self.take_vars(&outcome.globals, outcome.skipped_globals.clone())?;
                }
                if let Some(e) = outcome.error {
                    self.report.error = Some(e.0);
                    return Ok(Step::Finished);
                }
                let value = match outcome
                    .value
                    .as_ref()
                    .map(|f| Data::from_flat(f, MAX_DATA_DEPTH))
                {
                    None => None,
                    Some(Ok(v)) => Some(v),
                    Some(Err(e)) => {
                        return Err(self.violation(format!("malformed result value: {e}")))
                    }
                };
                let cap = self.req.limits.result_bytes;
                if let Some(r) = &outcome.repr {
                    if r.len() as u64 > cap {
                        return Err(limit(
                            "result",
                            format!("the result's repr is {} bytes; the limit is {cap}", r.len()),
                        ));
                    }
                }
                self.report.value = value
                    .as_ref()
                    .map_or(serde_json::Value::Null, json::to_json);
                self.report.repr = if value.is_some() { outcome.repr } else { None };
                Ok(Step::Finished)
            }
            FromWorker::Ready { .. } | FromWorker::SetupFailed { .. } => {
                Err(self.violation("sent a greeting in the middle of a run".into()))
            }
        }
    }
}

/// Approximate encoded size of a node (for the trace's result_bytes).
fn node_bytes(n: &lackpy_policy::wire::Node) -> u64 {
    use lackpy_policy::wire::Node;
    match n {
        Node::Str(s) | Node::BigInt(s) => s.len() as u64 + 2,
        _ => 2,
    }
}

/// A program that passed validation, ready to be sent to a worker.
pub(crate) struct Checked<'r> {
    source: &'r str,
    /// The session variables a program may be given (see
    /// [`crate::RunOptions::initial_vars`]).
    initial: Vec<(String, Data)>,
}

/// Validate a run's program (size, UTF-8, the language and the profile's
/// namespace, with its session variables predefined); on failure the
/// error is put in `report` and `None` returned. Sets the report's grade
/// and calls.
pub(crate) fn check_program<'r>(
    req: &'r RunRequest,
    opts: &RunOptions,
    report: &mut RunReport,
) -> Option<Checked<'r>> {
    let limits = &req.limits;
    if req.source.len() as u64 > limits.source_bytes {
        report.error = Some(ErrorInfo::new(
            ErrorKind::Validation,
            "SourceTooLarge",
            format!(
                "program is {} bytes; the limit is {}",
                req.source.len(),
                limits.source_bytes
            ),
        ));
        return None;
    }
    let source = match std::str::from_utf8(&req.source) {
        Ok(s) => s,
        Err(e) => {
            report.error = Some(ErrorInfo::new(
                ErrorKind::Validation,
                "EncodingError",
                format!(
                    "program is not valid UTF-8 (invalid byte at offset {})",
                    e.valid_up_to()
                ),
            ));
            return None;
        }
    };
    let ns = req.profile.namespace();
    let initial: Vec<(String, Data)> = opts
        .initial_vars
        .iter()
        .filter(|(n, _)| lackpy_policy::lang::is_predefinable(n, &ns))
        .cloned()
        .collect();
    let predefined: Vec<String> = initial.iter().map(|(n, _)| n.clone()).collect();
    match lackpy_policy::validate_with_predefined(source, &ns, limits, &predefined) {
        Ok(program) => {
            report.grade = program.grade;
            report.calls = program.calls;
            report.surrogates = program.surrogates;
            Some(Checked { source, initial })
        }
        Err(errors) => {
            report.error = Some(lackpy_policy::first_error(errors));
            None
        }
    }
}

impl Checked<'_> {
    /// The `Run` frame for this program.
    pub(crate) fn run_message(&self, req: &RunRequest, opts: &RunOptions) -> ToWorker {
        ToWorker::Run {
            protocol: PROTOCOL_VERSION,
            program: self.source.to_string(),
            tools: req
                .profile
                .tools
                .iter()
                .map(|(alias, s)| ToolSig {
                    name: alias.clone(),
                    args: s.args.iter().map(|a| a.name.clone()).collect(),
                })
                .collect(),
            limits: req.limits.clone(),
            globals: self
                .initial
                .iter()
                .map(|(n, d)| (n.clone(), d.to_flat()))
                .collect(),
            want_globals: opts.want_vars,
        }
    }
}
