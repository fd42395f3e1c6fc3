//! Worker roles: the executor main loop, and (only with the `test-roles`
//! feature) the `probe` and `hostile` roles the security tests drive.
//!
//! A worker is the `lackpy` binary re-exec'd by the supervisor with
//! `__worker <role> --jail <spec>`, the IPC socket on fd 3, an empty
//! environment and /dev/null on stdin/stdout. It jails itself first, then
//! says `Ready` (or `SetupFailed`), then serves exactly one run.

use crate::interp::{self, Kwargs, Output, ToolHost};
use crate::ipc::{Channel, FrameError, SpinWait};
use crate::jail::{self, JailSpec};
use lackpy_policy::lang::{Namespace, ToolEntry};
use lackpy_policy::wire::{
    Data, ErrorInfo, ErrorKind, FromWorker, Outcome, ToWorker, ToolFailure, WireError,
    MAX_DATA_DEPTH, PROTOCOL_VERSION,
};
use std::cell::RefCell;
use std::os::fd::{FromRawFd, OwnedFd};
use std::rc::Rc;

/// Exit status of a worker whose jail or protocol failed.
pub const EXIT_SETUP: i32 = 4;

/// Take ownership of the IPC socket on fd 3.
///
/// # Errors
/// When fd 3 is not an open socket.
pub fn ipc_channel() -> Result<Channel, String> {
    let fd = crate::ipc::IPC_FD;
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes one stat struct into `st`.
    let rc = unsafe { libc::fstat(fd, st.as_mut_ptr()) };
    if rc != 0 {
        return Err("fd 3 is not open: a worker must be started by the supervisor".into());
    }
    // SAFETY: fstat succeeded, so `st` is initialised.
    let st = unsafe { st.assume_init() };
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err("fd 3 is not a socket: a worker must be started by the supervisor".into());
    }
    // SAFETY: fd 3 is open, is a socket, and nothing else in this process owns it.
    Ok(Channel::new(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Jail the process per `spec` and report the outcome on `chan`: `Ready`,
/// or `SetupFailed` (then the caller exits).
///
/// # Errors
/// The jail error (already reported to the supervisor).
pub fn jail_and_greet(
    chan: &mut Channel,
    spec: &JailSpec,
) -> Result<jail::JailStatus, jail::JailError> {
    let r = jail::enter(spec);
    // If the supervisor is gone there is nobody to serve; the caller exits.
    let _ = greet(chan, r.as_ref().map(|_| ()));
    r
}

/// Tell the supervisor how the jail went: `Ready`, or `SetupFailed` naming
/// the step and errno.
///
/// # Errors
/// The send failed (the supervisor is gone).
pub fn greet(chan: &mut Channel, jailed: Result<(), &jail::JailError>) -> Result<(), FrameError> {
    match jailed {
        Ok(()) => chan.send(
            &FromWorker::Ready {
                protocol: PROTOCOL_VERSION,
            },
            None,
        ),
        Err(e) => chan.send(
            &FromWorker::SetupFailed {
                step: e.step().to_string(),
                errno: e.errno(),
                detail: e.to_string(),
            },
            None,
        ),
    }
}

/// The executor role: jail, greet, serve one run, exit. Returns the exit status.
pub fn executor(spec: &JailSpec) -> i32 {
    let mut chan = match ipc_channel() {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("lackpy worker: {msg}");
            return EXIT_SETUP;
        }
    };
    if jail_and_greet(&mut chan, spec).is_err() {
        return EXIT_SETUP;
    }
    match serve_one(Rc::new(RefCell::new(chan))) {
        Ok(()) => 0,
        Err(_) => EXIT_SETUP,
    }
}

/// Serve one run on a worker whose jail is already complete and who
/// already said `Ready` (a zygote's child): `role` is `executor` (or, in
/// test builds, `probe ACTION [ARG]`). Returns the exit status.
pub fn after_jail(chan: Channel, role: &[String]) -> i32 {
    match role.first().map(String::as_str) {
        Some("executor") => match serve_one(Rc::new(RefCell::new(chan))) {
            Ok(()) => 0,
            Err(_) => EXIT_SETUP,
        },
        #[cfg(feature = "test-roles")]
        Some("probe") => test_roles::probe_jailed(chan, role.get(1..).unwrap_or(&[])),
        _ => EXIT_SETUP,
    }
}

/// A program touching the common paths of the parser, validator and
/// interpreter (loops, dicts, comprehensions, strings, f-strings, sorting,
/// a tool call), run once by a zygote before it says `Ready`.
const WARM_UP: &str =
    "d = {}\nfor i in range(20):\n    k = str(i % 3)\n    d[k] = d.get(k, 0) + i\n\
xs = [x * 2 for x in range(10) if x % 2 == 0]\nnames = ['b', 'a', 'c']\n\
s = ', '.join(sorted(names)).upper().split(',')\nt = f'{len(xs):>4} {1.5:.2f} {d}'\n\
r = read_file('x')\nprint(t, s, r)\nsorted(d.items(), key=lambda kv: kv[1], reverse=True)\n";

/// Run [`WARM_UP`] with a tool host that answers every call with `None`.
///
/// Why: the zygote runs it once, before it forks any worker, so the
/// interpreter's lazily built tables and the allocator's heap already exist
/// in every forked worker (shared copy-on-write) instead of being built in
/// each worker's first run. It used to run in every forked worker before
/// `Ready`; that cost 200–300 µs of CPU per worker (`lackpy mcp`, sequential
/// calls: 1.13–1.26 ms of CPU per call then, 0.85–1.05 ms now, p90 1.0–1.25
/// ms then, 0.78–0.93 ms now) and, with pool refills competing with runs
/// on two cores, made runs slower, not faster. The interpreter keeps no
/// state between runs, so nothing of this run is visible to a real one.
pub fn warm_up() {
    struct NoTools;
    impl ToolHost for NoTools {
        fn call(
            &mut self,
            _name: &str,
            _args: Vec<Data>,
            _kwargs: Kwargs,
        ) -> Result<Data, ToolFailure> {
            Ok(Data::None)
        }
    }
    let ns = Namespace {
        tools: vec![ToolEntry::new("read_file", &["path"], Default::default())],
    };
    let limits = lackpy_policy::wire::Limits::default();
    if let Ok(prog) = lackpy_policy::validate_with_predefined(WARM_UP, &ns, &limits, &[]) {
        let mut out = String::new();
        let _ = interp::run(&prog, &mut NoTools, &mut out, &limits);
    }
}

/// Receive `Run`, validate, interpret, stream stdout, send `Done`.
fn serve_one(chan: Rc<RefCell<Channel>>) -> Result<(), FrameError> {
    let run = chan.borrow_mut().recv::<ToWorker>(None)?;
    // Tool results usually come back within microseconds: poll briefly
    // before sleeping (see `Channel::set_spin`).
    chan.borrow_mut()
        .set_spin(TOOL_RESULT_SPIN, SpinWait::Pause);
    let (program, tools, limits, globals, want_globals) = match run {
        ToWorker::Run {
            protocol,
            program,
            tools,
            limits,
            globals,
            want_globals,
        } if protocol == PROTOCOL_VERSION => (program, tools, limits, globals, want_globals),
        _ => {
            return Err(FrameError::Malformed(
                "expected Run with our protocol version",
            ))
        }
    };
    let ns = Namespace {
        tools: tools
            .into_iter()
            .map(|t| ToolEntry {
                target: t.name.clone(),
                name: t.name,
                args: t.args,
                grade: Default::default(),
            })
            .collect(),
    };
    // Initial variables: plain data, names a program could assign.
    let mut initial = Vec::with_capacity(globals.len());
    for (name, flat) in globals {
        if !lackpy_policy::lang::is_predefinable(&name, &ns) {
            return Err(FrameError::Malformed(
                "initial variable with a forbidden name",
            ));
        }
        match Data::from_flat(&flat, MAX_DATA_DEPTH) {
            Ok(d) => initial.push((name, d)),
            Err(_) => return Err(FrameError::Malformed("malformed initial variable")),
        }
    }
    let predefined: Vec<String> = initial.iter().map(|(n, _)| n.clone()).collect();
    let outcome = match lackpy_policy::validate_with_predefined(&program, &ns, &limits, &predefined)
    {
        Err(errors) => failed(lackpy_policy::first_error(errors), 0),
        Ok(prog) => {
            let mut out = IpcOutput {
                chan: Rc::clone(&chan),
                buf: String::new(),
                total: 0,
                cap: limits.stdout_bytes,
            };
            let mut host = IpcHost {
                chan: Rc::clone(&chan),
                next_id: 0,
            };
            // The run is on this process's main thread (a 64 MiB stack).
            interp::budget::set_stack_budget(interp::budget::WORKER_STACK_BUDGET);
            let (r, g) = if want_globals || !initial.is_empty() {
                interp::run_with_globals(&prog, &mut host, &mut out, &limits, initial)
            } else {
                (
                    interp::run(&prog, &mut host, &mut out, &limits),
                    interp::Globals::default(),
                )
            };
            out.flush()?;
            let (globals, skipped_globals) = if want_globals {
                (
                    g.vars
                        .iter()
                        .map(|(n, d)| (n.clone(), d.to_flat()))
                        .collect(),
                    g.skipped,
                )
            } else {
                (Vec::new(), Vec::new())
            };
            Outcome {
                value: r.value.as_ref().map(Data::to_flat),
                repr: r.repr,
                error: r.error.map(WireError),
                fuel_used: r.fuel_used,
                globals,
                skipped_globals,
            }
        }
    };
    let fuel_used = outcome.fuel_used;
    let mut chan = chan.borrow_mut();
    match chan.send(&FromWorker::Done(outcome), None) {
        // A value (or variables) of more items than the supervisor may
        // decode, though small on the wire (`[0] * 600000`): the result
        // limit, not a frame the supervisor would call a protocol violation.
        Err(e @ FrameError::TooManyValues { .. }) => {
            let limit = ErrorInfo::new(
                ErrorKind::Limit,
                "result",
                format!("result limit exceeded: the value has too many items to send ({e})"),
            );
            chan.send(&FromWorker::Done(failed(limit, fuel_used)), None)
        }
        r => r,
    }
}

/// The outcome of a run that ended with `error` after `fuel_used` fuel: no
/// value, no variables.
fn failed(error: ErrorInfo, fuel_used: u64) -> Outcome {
    Outcome {
        value: None,
        repr: None,
        error: Some(WireError(error)),
        fuel_used,
        globals: Vec::new(),
        skipped_globals: Vec::new(),
    }
}

/// How long the worker polls for a tool result before it sleeps, pausing
/// (not yielding) between polls: a yield on a loaded host gives a slice to
/// unrelated work on every call (see `Channel::set_spin`).
/// Why 50 µs: covers a builtin tool's answer (read_file of a small file
/// is ~10 µs); slower tools cost this much CPU once per call.
const TOOL_RESULT_SPIN: std::time::Duration = std::time::Duration::from_micros(50);

/// Flush printed text in chunks of this size.
/// Why: one frame per `print` would cost a round of syscalls each; 32 KiB
/// keeps memory small and frames well under the chunk size.
const STDOUT_CHUNK: usize = 32 * 1024;

/// [`Output`] that streams `print` text to the supervisor, capped at the run's `stdout_bytes`.
struct IpcOutput {
    // Shared with the host: the interpreter holds `&mut` to both, and they
    // use the channel strictly one at a time on this single thread.
    chan: Rc<RefCell<Channel>>,
    buf: String,
    total: u64,
    cap: u64,
}

impl IpcOutput {
    fn flush(&mut self) -> Result<(), FrameError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::take(&mut self.buf);
        self.chan
            .borrow_mut()
            .send(&FromWorker::Stdout(chunk), None)
    }
}

impl Output for IpcOutput {
    fn write(&mut self, text: &str) -> bool {
        let n = text.len() as u64;
        if self.total.saturating_add(n) > self.cap {
            // Keep what fits (on a char boundary) so the author sees where it stopped.
            let room = usize::try_from(self.cap - self.total).unwrap_or(0);
            let mut cut = room.min(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            self.buf.push_str(&text[..cut]);
            self.total = self.cap;
            return false;
        }
        self.total += n;
        self.buf.push_str(text);
        if self.buf.len() >= STDOUT_CHUNK {
            return self.flush().is_ok();
        }
        true
    }
}

/// [`ToolHost`] that forwards each call to the supervisor and blocks for the answer.
struct IpcHost {
    chan: Rc<RefCell<Channel>>,
    next_id: u64,
}

impl ToolHost for IpcHost {
    fn call(&mut self, name: &str, args: Vec<Data>, kwargs: Kwargs) -> Result<Data, ToolFailure> {
        let mut chan = self.chan.borrow_mut();
        self.next_id += 1;
        let id = self.next_id;
        let msg = FromWorker::ToolCall {
            id,
            name: name.to_string(),
            args: args.iter().map(Data::to_flat).collect(),
            kwargs: kwargs
                .iter()
                .map(|(k, v)| (k.clone(), v.to_flat()))
                .collect(),
        };
        let broken = |what: String| ToolFailure {
            type_name: "ToolFailed".into(),
            message: what,
        };
        chan.send(&msg, None).map_err(|e| match e {
            FrameError::TooLarge { .. } | FrameError::TooManyValues { .. } => ToolFailure {
                type_name: "TooLarge".into(),
                message: format!("{name}(): the arguments are too large to send: {e}"),
            },
            e => broken(format!("tool call could not be sent: {e}")),
        })?;
        match chan.recv::<ToWorker>(None) {
            Ok(ToWorker::ToolResult { id: rid, result }) if rid == id => match result {
                Ok(flat) => Data::from_flat(&flat, MAX_DATA_DEPTH)
                    .map_err(|e| broken(format!("bad tool result: {e}"))),
                Err(f) => Err(f),
            },
            Ok(_) => Err(broken("supervisor answered out of order".into())),
            Err(e) => Err(broken(format!("no answer from the supervisor: {e}"))),
        }
    }
}

#[cfg(feature = "test-roles")]
pub mod test_roles;
