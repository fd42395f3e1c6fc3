//! The lackpy interpreter: CPython 3.11 semantics for the lackpy subset,
//! with hard limits on fuel, memory, depth, output, tool calls and result size.
//!
//! Pipeline: [`compile`] lowers the validated rustpython AST into a tree
//! with slot-resolved names; [`eval`] walks it. Values live in [`value`];
//! operators in [`ops`]; text rendering in [`format`]; builtins and methods
//! in [`builtins`] and [`methods`]. The method allowlist is
//! `lackpy_policy::lang::METHODS`, shared with the validator;
//! [`methods::has_method`] dispatches exactly its entries.

/// An enum of names (builtins, methods) with `from_name` and `name`.
macro_rules! named_enum {
    ($(#[$doc:meta])* $ty:ident: $($v:ident = $s:literal),* $(,)?) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $ty { $($v),* }
        impl $ty {
            /// Look a name up.
            pub fn from_name(s: &str) -> Option<$ty> {
                match s { $($s => Some($ty::$v),)* _ => None }
            }
            /// The name.
            pub fn name(self) -> &'static str {
                match self { $($ty::$v => $s),* }
            }
        }
    };
}

// Crate-private, as monty keeps its `Value` private: the public surface is
// the entry points below and the few items other crates use.
pub(crate) mod budget;
pub(crate) mod builtins;
pub(crate) mod compile;
pub(crate) mod err;
pub(crate) mod eval;
pub(crate) mod format;
pub(crate) mod iter;
pub(crate) mod methods;
pub(crate) mod ops;
pub(crate) mod setorder;
pub(crate) mod surrogate;
pub(crate) mod unicode;
pub(crate) mod value;

pub use budget::{set_stack_budget, WORKER_STACK_BUDGET};
pub use format::{float_repr, str_repr};
pub use value::{mem_peak, mem_peak_reset};

use lackpy_policy::wire::{Data, ErrorInfo, ErrorKind, Limits, ToolFailure};
use lackpy_policy::{Grade, Namespace, Program, ToolEntry};

use compile::StmtKind;
use err::{Exc, InterpResult};
use eval::Interp;
use value::Value;

/// The keyword arguments of a tool call, in the order the program wrote them.
pub type Kwargs = Vec<(String, Data)>;

/// How a program reaches its tools. The worker's implementation sends each
/// call over IPC; tests use an in-process fake.
pub trait ToolHost {
    /// Call tool `name` (as written in the program) with plain-data arguments.
    ///
    /// # Errors
    /// The tool's failure, which the interpreter raises as a `tool` error.
    fn call(&mut self, name: &str, args: Vec<Data>, kwargs: Kwargs) -> Result<Data, ToolFailure>;
}

/// Where `print` output goes. The worker streams it over IPC; tests collect it.
pub trait Output {
    /// Append printed text. Returning `false` stops the run with an `output` limit error.
    fn write(&mut self, text: &str) -> bool;
}

impl Output for String {
    fn write(&mut self, text: &str) -> bool {
        self.push_str(text);
        true
    }
}

/// The result of interpreting one program.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    /// The value of the last top-level expression statement, if the program ended in one.
    pub value: Option<Data>,
    /// Its Python repr.
    pub repr: Option<String>,
    /// The error that ended the run, if any.
    pub error: Option<ErrorInfo>,
    /// Fuel consumed.
    pub fuel_used: u64,
}

/// Interpret a validated program.
///
/// Never panics on hostile programs: every failure is a [`RunResult`] with
/// `error` set (kind `runtime`, `limit`, `tool` or `internal`).
pub fn run(
    program: &Program,
    host: &mut dyn ToolHost,
    out: &mut dyn Output,
    limits: &Limits,
) -> RunResult {
    let tools: Vec<String> = program.calls.clone();
    let is_tool = |n: &str| tools.iter().any(|t| t == n);
    run_with(program, &is_tool, host, out, limits)
}

/// Like [`run`], with an explicit tool predicate (names that are tools of the profile).
pub fn run_with(
    program: &Program,
    is_tool: &dyn Fn(&str) -> bool,
    host: &mut dyn ToolHost,
    out: &mut dyn Output,
    limits: &Limits,
) -> RunResult {
    run_inner(program, is_tool, host, out, limits, None).0
}

/// The top-level variables a run left (see [`run_with_globals`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Globals {
    /// Plain-data variables, in slot (first-appearance) order.
    pub vars: Vec<(String, Data)>,
    /// Variables left out: not plain data (iterators, ranges, views,
    /// lambdas) or beyond the size bound (`limits.result_bytes` in total).
    pub skipped: Vec<String>,
}

/// Like [`run`], for notebook-style sessions: `initial` variables are bound
/// before the program starts (the program must have been validated with
/// their names predefined, see `lackpy_policy::validate_with_predefined`),
/// and the plain-data top-level variables are returned at the end, also
/// when the run failed part-way (as a notebook keeps a failed cell's
/// assignments). Initial variables the program never mentions are not
/// returned (the caller keeps them). Only plain data is kept: `None`,
/// bool, int, float, str, and lists/tuples/dicts/sets of those; a `range`,
/// an iterator or a dict view is skipped (named in [`Globals::skipped`]),
/// never converted. The reported variables total at most
/// `limits.result_bytes` and at most a quarter of `MAX_FRAME_BYTES`
/// (approximate encoded size); later ones beyond it are skipped.
pub fn run_with_globals(
    program: &Program,
    host: &mut dyn ToolHost,
    out: &mut dyn Output,
    limits: &Limits,
    initial: Vec<(String, Data)>,
) -> (RunResult, Globals) {
    let tools: Vec<String> = program.calls.clone();
    let is_tool = |n: &str| tools.iter().any(|t| t == n);
    run_inner(program, &is_tool, host, out, limits, Some(initial))
}

fn run_inner(
    program: &Program,
    is_tool: &dyn Fn(&str) -> bool,
    host: &mut dyn ToolHost,
    out: &mut dyn Output,
    limits: &Limits,
    initial: Option<Vec<(String, Data)>>,
) -> (RunResult, Globals) {
    // Surrogate mode for this run only (restored when the run returns).
    let _mode = surrogate::Mode::enter(program.surrogates);
    let code = match compile::compile(&program.body, &program.source, is_tool) {
        Ok(c) => c,
        Err(e) => return (fail(program, &e, 0), Globals::default()),
    };
    budget::start(limits.fuel, limits.memory_bytes, limits.wall_ms);
    let mut it = Interp {
        code: &code,
        slots: vec![None; code.nslots],
        host,
        out,
        limits,
        tool_calls: 0,
        out_bytes: 0,
        depth: 0,
    };
    let want = initial.is_some();
    let bound = bind_globals(&mut it, initial.unwrap_or_default());
    let r = match bound {
        Ok(()) => exec_program(&mut it, limits),
        Err(e) => Err(e),
    };
    let fuel_used = budget::fuel_used();
    let globals = if want {
        // The run may have spent its fuel or time: collect under a fresh
        // budget (the work is bounded by `result_bytes`).
        budget::start(limits.fuel, limits.memory_bytes, limits.wall_ms);
        collect_globals(&mut it, limits)
    } else {
        Globals::default()
    };
    let result = match r {
        Ok(Some((data, repr))) => RunResult {
            value: Some(data),
            repr: Some(repr),
            error: None,
            fuel_used,
        },
        Ok(None) => RunResult {
            value: None,
            repr: None,
            error: None,
            fuel_used,
        },
        Err(e) => fail(program, &e, fuel_used),
    };
    // Drop the program's values while the budget is still installed, then remove it.
    drop(it);
    budget::finish();
    (result, globals)
}

/// Bind the initial variables the program mentions (others have no slot).
fn bind_globals(it: &mut Interp, initial: Vec<(String, Data)>) -> InterpResult<()> {
    let code = it.code;
    for (name, data) in initial {
        let Some((_, slot)) = code.globals.iter().find(|(n, _)| **n == *name) else {
            continue;
        };
        if surrogate::on() && surrogate::data_has_placeholder(&data) {
            surrogate::from_outside_error(&format!("session variable '{name}'"))?;
        }
        let v = eval::from_data(&data, 0)?;
        if let Some(s) = it.slots.get_mut(*slot as usize) {
            *s = Some(v);
        }
    }
    Ok(())
}

/// The plain-data top-level variables, bounded in total by `result_bytes`.
fn collect_globals(it: &mut Interp, limits: &Limits) -> Globals {
    let code = it.code;
    // Also at most a quarter frame, so `Done` (value + variables) always fits.
    let cap = usize::try_from(limits.result_bytes)
        .unwrap_or(usize::MAX)
        .min(lackpy_policy::wire::MAX_FRAME_BYTES / 4);
    let mut used = 0usize;
    let mut g = Globals::default();
    for (name, slot) in &code.globals {
        let Some(Some(v)) = it.slots.get(*slot as usize).cloned() else {
            continue;
        };
        // Bound the size before converting: the repr (stopped at the room
        // left) is never much smaller than the data.
        let room = cap.saturating_sub(used);
        let mut repr = String::new();
        let fits = it
            .repr_into(&v, &mut repr, &mut Vec::new(), 0, false, room)
            .is_ok()
            && repr.len() <= room;
        drop(repr);
        let data = if fits {
            it.data_of(&v, false).ok()
        } else {
            None
        };
        // In surrogate mode a str holding a surrogate (a placeholder) is not
        // kept: a later cell would take it for a private-use character.
        let data = data.filter(|d| !(surrogate::on() && surrogate::data_has_placeholder(d)));
        match data {
            Some(d) => {
                let size = approx_size(&d).saturating_add(name.len());
                if used.saturating_add(size) <= cap {
                    used += size;
                    g.vars.push((name.to_string(), d));
                } else {
                    g.skipped.push(name.to_string());
                }
            }
            None => g.skipped.push(name.to_string()),
        }
    }
    g
}

/// Approximate encoded size of plain data, in bytes (iterative: data from
/// a program may be deep).
fn approx_size(d: &Data) -> usize {
    let mut total = 0usize;
    let mut stack = vec![d];
    while let Some(d) = stack.pop() {
        total = total.saturating_add(match d {
            Data::Str(s) | Data::BigInt(s) => s.len() + 2,
            Data::Int(_) | Data::Float(_) => 9,
            _ => 2,
        });
        push_children(d, &mut stack);
    }
    total
}

/// Push the items of a list, tuple or set, or the keys and values of a
/// dict, onto `stack` (for iterative walks over data that may be deep).
pub(crate) fn push_children<'a>(d: &'a Data, stack: &mut Vec<&'a Data>) {
    match d {
        Data::List(v) | Data::Tuple(v) | Data::Set(v) => stack.extend(v.iter()),
        Data::Dict(v) => {
            for (k, x) in v {
                stack.push(k);
                stack.push(x);
            }
        }
        _ => {}
    }
}

fn exec_program(it: &mut Interp, limits: &Limits) -> InterpResult<Option<(Data, String)>> {
    let code = it.code;
    let Some((last, init)) = code.body.split_last() else {
        return Ok(None);
    };
    for s in init {
        it.exec_block(std::slice::from_ref(s))?;
    }
    let v: Value = match &last.k {
        StmtKind::Expr(e) => {
            budget::tick(1).map_err(|x| positioned(x, last.pos))?;
            it.eval(e)?
        }
        _ => {
            it.exec_block(std::slice::from_ref(last))?;
            return Ok(None);
        }
    };
    let budget_bytes = usize::try_from(limits.result_bytes).unwrap_or(usize::MAX);
    let mut repr = String::new();
    it.repr_into(&v, &mut repr, &mut Vec::new(), 0, false, budget_bytes)
        .map_err(|e| match e.kind {
            err::ExcKind::Limit("memory") => Exc::limit(
                "result",
                format!(
                    "result limit exceeded: the value's repr is longer than {budget_bytes} bytes"
                ),
            ),
            _ => e,
        })?;
    if repr.len() > budget_bytes {
        return Err(Exc::limit(
            "result",
            format!("result limit exceeded: the value's repr is longer than {budget_bytes} bytes"),
        ));
    }
    let data = it.data_of(&v, true)?;
    Ok(Some((data, repr)))
}

fn positioned(mut e: Box<Exc>, pos: u32) -> Box<Exc> {
    if e.pos.is_none() {
        e.pos = Some(pos);
    }
    e
}

fn fail(program: &Program, e: &Exc, fuel_used: u64) -> RunResult {
    let mut info = e.to_info();
    if let Some(p) = e.pos {
        let (line, col) = program.locate(p.into());
        info.line = Some(line);
        info.col = Some(col);
    }
    RunResult {
        value: None,
        repr: None,
        error: Some(info),
        fuel_used,
    }
}

/// Validate `src` against a namespace holding `tools`, then run it (for tests and benches).
/// A validation failure comes back as a [`RunResult`] carrying the first validation error.
pub fn run_source(
    src: &str,
    tools: &[&str],
    host: &mut dyn ToolHost,
    out: &mut dyn Output,
    limits: &Limits,
) -> RunResult {
    let ns = Namespace {
        tools: tools
            .iter()
            .map(|t| ToolEntry {
                name: (*t).to_string(),
                target: (*t).to_string(),
                args: Vec::new(),
                grade: Grade::default(),
            })
            .collect(),
    };
    match lackpy_policy::validate(src, &ns, limits) {
        Ok(p) => {
            let is_tool = |n: &str| tools.contains(&n);
            run_with(&p, &is_tool, host, out, limits)
        }
        Err(errs) => RunResult {
            value: None,
            repr: None,
            error: Some(errs.into_iter().next().unwrap_or_else(|| {
                ErrorInfo::new(ErrorKind::Validation, "SyntaxError", "invalid program")
            })),
            fuel_used: 0,
        },
    }
}

/// A [`ToolHost`] with no tools: every call fails.
pub struct NoTools;

impl ToolHost for NoTools {
    fn call(&mut self, name: &str, _args: Vec<Data>, _kwargs: Kwargs) -> Result<Data, ToolFailure> {
        Err(ToolFailure {
            type_name: "ToolFailed".into(),
            message: format!("no tool named '{name}'"),
        })
    }
}

#[cfg(test)]
mod tests;
