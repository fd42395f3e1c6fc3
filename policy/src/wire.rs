//! Wire types shared by the supervisor and the workers.
//!
//! Everything that crosses the process boundary is defined here, as plain
//! data: the [`Data`] value a tool call carries, the [`Limits`] of a run, the
//! [`ErrorInfo`] that becomes the CLI contract's `error` object, and the IPC
//! message enums. Nothing here does I/O; framing over a socket lives in the
//! worker's `ipc` module, which both sides link.
//!
//! [`Data`] is recursive in memory but travels *flat* ([`FlatData`]): a
//! pre-order list of nodes, so decoding a hostile frame never recurses and
//! the depth of the rebuilt tree is checked explicitly.

use bincode::{Decode, Encode};
use serde::{Deserialize, Serialize};

/// Protocol version, sent in the first frame in each direction.
/// Bump it whenever any message enum below changes shape.
pub const PROTOCOL_VERSION: u32 = 3;

/// Largest frame either side will send or accept, in bytes.
/// Why: a run's result is capped at 8 MiB by default ([`Limits::result_bytes`]),
/// and frames must hold that plus a little envelope; anything larger is hostile.
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// Deepest nesting of a [`Data`] value accepted at the boundary: a
/// program's result, a tool's arguments and its result.
/// Why 100: every such value ends up as JSON somewhere (the CLI contract,
/// an MCP `structuredContent`, a JSON-RPC request to an MCP server), and
/// serde_json — rmcp's parser, so most Rust MCP clients' — refuses input
/// nested deeper than 128, envelope included: a 150-deep result made such
/// a client drop the answer and wait forever. 100 levels plus the deepest
/// envelope (JSON-RPC → result → structuredContent → value) stays under
/// it, and matches the language's own nesting limit (`Limits::max_depth`).
/// Recursive code (JSON rendering, repr) must not overflow the stack on a
/// hostile value either.
pub const MAX_DATA_DEPTH: usize = 100;

/// A plain data value: what tool arguments and results and a program's
/// final value are made of. Nothing callable or introspectable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Data {
    /// Python `None`.
    None,
    /// Python `bool`.
    Bool(bool),
    /// Python `int` that fits in an `i64`.
    Int(i64),
    /// Python `int` outside the `i64` range, as its decimal text (sign included).
    BigInt(String),
    /// Python `float`.
    Float(f64),
    /// Python `str`.
    Str(String),
    /// Python `list`.
    List(Vec<Data>),
    /// Python `tuple`.
    Tuple(Vec<Data>),
    /// Python `dict`, in insertion order.
    Dict(Vec<(Data, Data)>),
    /// Python `set`, in insertion order.
    Set(Vec<Data>),
}

/// One node of a [`FlatData`] pre-order encoding. Containers give the number
/// of child *values* (a dict entry is two values: key then value).
#[derive(Debug, Clone, PartialEq, Encode, Decode)]
pub enum Node {
    /// `None`.
    None,
    /// A bool.
    Bool(bool),
    /// A small int.
    Int(i64),
    /// A big int as decimal text.
    BigInt(String),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// A list of `n` values.
    List(u32),
    /// A tuple of `n` values.
    Tuple(u32),
    /// A dict of `n` entries (`2n` values follow).
    Dict(u32),
    /// A set of `n` values.
    Set(u32),
}

/// A [`Data`] value flattened for the wire.
#[derive(Debug, Clone, PartialEq, Encode, Decode, Default)]
pub struct FlatData(pub Vec<Node>);

/// Why a [`FlatData`] could not be rebuilt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataError {
    /// The nodes ended before every container was filled.
    #[error("truncated value: {0} more node(s) expected")]
    Truncated(usize),
    /// Nodes were left over after the value was complete.
    #[error("trailing nodes after a complete value")]
    Trailing,
    /// The value nests deeper than allowed.
    #[error("value nests deeper than {0} levels")]
    TooDeep(usize),
    /// A big int's text is not a decimal integer.
    #[error("malformed big integer")]
    BadBigInt,
}

impl Data {
    /// The Python type name of the value, for messages (`NoneType`,
    /// `int`, `list`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            Data::None => "NoneType",
            Data::Bool(_) => "bool",
            Data::Int(_) | Data::BigInt(_) => "int",
            Data::Float(_) => "float",
            Data::Str(_) => "str",
            Data::List(_) => "list",
            Data::Tuple(_) => "tuple",
            Data::Dict(_) => "dict",
            Data::Set(_) => "set",
        }
    }

    /// Flatten into the wire form.
    pub fn to_flat(&self) -> FlatData {
        let mut out = Vec::new();
        let mut stack: Vec<&Data> = vec![self];
        while let Some(d) = stack.pop() {
            match d {
                Data::None => out.push(Node::None),
                Data::Bool(b) => out.push(Node::Bool(*b)),
                Data::Int(i) => out.push(Node::Int(*i)),
                Data::BigInt(s) => out.push(Node::BigInt(s.clone())),
                Data::Float(f) => out.push(Node::Float(*f)),
                Data::Str(s) => out.push(Node::Str(s.clone())),
                Data::List(v) => {
                    out.push(Node::List(len_u32(v.len())));
                    stack.extend(v.iter().rev());
                }
                Data::Tuple(v) => {
                    out.push(Node::Tuple(len_u32(v.len())));
                    stack.extend(v.iter().rev());
                }
                Data::Set(v) => {
                    out.push(Node::Set(len_u32(v.len())));
                    stack.extend(v.iter().rev());
                }
                Data::Dict(v) => {
                    out.push(Node::Dict(len_u32(v.len())));
                    for (k, val) in v.iter().rev() {
                        stack.push(val);
                        stack.push(k);
                    }
                }
            }
        }
        FlatData(out)
    }

    /// Rebuild from the wire form, refusing anything deeper than `max_depth`.
    ///
    /// # Errors
    /// [`DataError`] when the nodes do not form exactly one value of bounded depth.
    pub fn from_flat(flat: &FlatData, max_depth: usize) -> Result<Data, DataError> {
        // Frames of containers under construction: (kind, remaining, items).
        struct Frame {
            kind: u8,
            remaining: usize,
            items: Vec<Data>,
        }
        let mut stack: Vec<Frame> = Vec::new();
        let mut result: Option<Data> = None;
        let mut iter = flat.0.iter();
        loop {
            if result.is_some() {
                break;
            }
            let Some(node) = iter.next() else {
                let missing = stack.iter().map(|f| f.remaining).sum::<usize>().max(1);
                return Err(DataError::Truncated(missing));
            };
            let mut value = match node {
                Node::None => Some(Data::None),
                Node::Bool(b) => Some(Data::Bool(*b)),
                Node::Int(i) => Some(Data::Int(*i)),
                Node::BigInt(s) => {
                    let digits = s.strip_prefix('-').unwrap_or(s);
                    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                        return Err(DataError::BadBigInt);
                    }
                    Some(Data::BigInt(s.clone()))
                }
                Node::Float(f) => Some(Data::Float(*f)),
                Node::Str(s) => Some(Data::Str(s.clone())),
                Node::List(n) | Node::Tuple(n) | Node::Set(n) | Node::Dict(n) => {
                    let (kind, count) = match node {
                        Node::List(_) => (0u8, *n as usize),
                        Node::Tuple(_) => (1, *n as usize),
                        Node::Set(_) => (2, *n as usize),
                        _ => (3, (*n as usize).saturating_mul(2)),
                    };
                    if stack.len() >= max_depth {
                        return Err(DataError::TooDeep(max_depth));
                    }
                    // Never trust the count for pre-allocation.
                    stack.push(Frame {
                        kind,
                        remaining: count,
                        items: Vec::with_capacity(count.min(1024)),
                    });
                    None
                }
            };
            // Close every container that is now complete.
            loop {
                if let Some(v) = value.take() {
                    match stack.last_mut() {
                        Some(top) => {
                            top.items.push(v);
                            top.remaining -= 1;
                        }
                        None => {
                            result = Some(v);
                            break;
                        }
                    }
                }
                match stack.last() {
                    Some(top) if top.remaining == 0 => {
                        let Some(done) = stack.pop() else { break };
                        value = Some(match done.kind {
                            0 => Data::List(done.items),
                            1 => Data::Tuple(done.items),
                            2 => Data::Set(done.items),
                            _ => {
                                let mut pairs = Vec::with_capacity(done.items.len() / 2);
                                let mut it = done.items.into_iter();
                                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                                    pairs.push((k, v));
                                }
                                Data::Dict(pairs)
                            }
                        });
                    }
                    _ => break,
                }
            }
        }
        if iter.next().is_some() {
            return Err(DataError::Trailing);
        }
        result.ok_or(DataError::Truncated(1))
    }

    /// Nesting depth (a scalar is 0), computed without recursion.
    pub fn depth(&self) -> usize {
        let mut max = 0;
        let mut stack = vec![(self, 0usize)];
        while let Some((d, lvl)) = stack.pop() {
            max = max.max(lvl);
            match d {
                Data::List(v) | Data::Tuple(v) | Data::Set(v) => {
                    stack.extend(v.iter().map(|c| (c, lvl + 1)))
                }
                Data::Dict(v) => {
                    for (k, val) in v {
                        stack.push((k, lvl + 1));
                        stack.push((val, lvl + 1));
                    }
                }
                _ => {}
            }
        }
        max
    }
}

fn len_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The limits of one run. Every field has a documented default; all are
/// configurable per profile (`[sandbox]`) and per call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Encode, Decode)]
pub struct Limits {
    /// Wall-clock limit of the whole run, in milliseconds. Default 10,000 (10 s).
    pub wall_ms: u64,
    /// Interpreter steps (fuel). Default 50,000,000.
    pub fuel: u64,
    /// Accounted bytes of live values. Default 256 MiB.
    pub memory_bytes: u64,
    /// Bytes a program may `print`. Default 1 MiB.
    pub stdout_bytes: u64,
    /// Tool calls per run. Default 10,000.
    pub tool_calls: u64,
    /// Bytes of the final value's rendering (repr and JSON). Default 8 MiB.
    pub result_bytes: u64,
    /// Bytes of program source. Default 64 KiB.
    pub source_bytes: u64,
    /// Nesting depth of source and of evaluation. Default 100.
    pub max_depth: u32,
    /// Bytes the run's builtin `write_file`/`edit_file` calls may write in
    /// all, counting each file written and each directory created as at
    /// least one [`WRITE_BLOCK`]. Checked by the supervisor before anything
    /// is written. Default 64 MiB.
    #[serde(default = "default_write_bytes")]
    pub write_bytes: u64,
}

/// The unit `write_bytes` charges a file write in (rounded up, at least
/// one) and each directory a write creates: a filesystem block, what
/// each costs the disk however little it holds.
pub const WRITE_BLOCK: u64 = 4096;

/// The default of [`Limits::write_bytes`].
/// Why 64 MiB: eight writes of the largest content one call takes (8 MiB),
/// or 16,384 small files, far above what a program composing tools
/// writes, while a loop of writes can no longer fill the disk (one wrote
/// 214 MB in a 10 s run before there was a bound).
pub const DEFAULT_WRITE_BYTES: u64 = 64 * 1024 * 1024;

fn default_write_bytes() -> u64 {
    DEFAULT_WRITE_BYTES
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            wall_ms: 10_000,
            fuel: 50_000_000,
            memory_bytes: 256 * 1024 * 1024,
            stdout_bytes: 1024 * 1024,
            tool_calls: 10_000,
            result_bytes: 8 * 1024 * 1024,
            source_bytes: 64 * 1024,
            max_depth: 100,
            write_bytes: DEFAULT_WRITE_BYTES,
        }
    }
}

/// The kind of an error, as the CLI contract names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Encode, Decode)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    /// The program was rejected before running (exit 2).
    Validation,
    /// A Python exception at run time (exit 1).
    Runtime,
    /// A limit was exceeded (exit 1); `type` names the limit.
    Limit,
    /// A tool call failed (exit 1).
    Tool,
    /// lackpy itself failed, e.g. the jail could not be set up (exit 4).
    Internal,
    /// A usage or configuration error found before anything ran: a bad
    /// config file, an unknown profile or tool, a missing workspace or
    /// input file (exit 3). Only the CLI's `--json` output uses it.
    Config,
}

/// The contract's `error` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Encode, Decode)]
pub struct ErrorInfo {
    /// Which kind of failure.
    pub kind: ErrorKind,
    /// Exception type (`NameError`), limit name (`fuel`) or tool error type (`FileNotFound`).
    #[serde(rename = "type")]
    pub type_name: String,
    /// Human-readable message (for runtime errors, CPython's message).
    pub message: String,
    /// 1-based source line, when known.
    pub line: Option<u32>,
    /// 1-based source column, when known.
    pub col: Option<u32>,
    /// A deterministic hint for the author, when one applies.
    pub hint: Option<String>,
}

impl ErrorInfo {
    /// An error with no position or hint.
    pub fn new(kind: ErrorKind, type_name: impl Into<String>, message: impl Into<String>) -> Self {
        ErrorInfo {
            kind,
            type_name: type_name.into(),
            message: message.into(),
            line: None,
            col: None,
            hint: None,
        }
    }

    /// The same error at 1-based `line` and `col`.
    #[must_use]
    pub fn at(mut self, line: u32, col: u32) -> Self {
        self.line = Some(line);
        self.col = Some(col);
        self
    }

    /// The same error with a hint for the author.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// The process exit status the contract assigns to this error.
    pub fn exit_code(&self) -> i32 {
        match self.kind {
            ErrorKind::Validation => 2,
            ErrorKind::Runtime | ErrorKind::Limit | ErrorKind::Tool => 1,
            ErrorKind::Internal => 4,
            ErrorKind::Config => 3,
        }
    }
}

/// A tool the worker may call: the name the program uses.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct ToolSig {
    /// Name as written in the program (an alias, when the profile maps one).
    pub name: String,
    /// Declared argument names, in order (used for keyword arguments).
    pub args: Vec<String>,
}

/// A tool call's failure, as the supervisor reports it to the worker.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct ToolFailure {
    /// One of `PathOutsideWorkspace FileNotFound IsADirectory NotUtf8 TooLarge
    /// BadArgument ToolFailed Timeout` (or a provider-specific type).
    pub type_name: String,
    /// What went wrong, for the author.
    pub message: String,
}

impl ToolFailure {
    /// A tool error of type `type_name` (see the field) with `message`.
    pub fn new(type_name: &str, message: impl Into<String>) -> ToolFailure {
        ToolFailure {
            type_name: type_name.to_string(),
            message: message.into(),
        }
    }
}

/// Supervisor → worker.
#[derive(Debug, Clone, PartialEq, Encode, Decode)]
pub enum ToWorker {
    /// Run one program. Sent once; the worker is single-use.
    Run {
        /// Must equal [`PROTOCOL_VERSION`].
        protocol: u32,
        /// Program text (already validated by the supervisor; re-validated by the worker).
        program: String,
        /// Tools of the active profile.
        tools: Vec<ToolSig>,
        /// The run's limits.
        limits: Limits,
        /// Variables bound before the program starts (a session's earlier
        /// cells), plain data only. Names are checked like program names.
        globals: Vec<(String, FlatData)>,
        /// Whether to report the plain-data top-level variables at the end.
        want_globals: bool,
    },
    /// The answer to `FromWorker::ToolCall` with the same `id`.
    ToolResult {
        /// The call's id.
        id: u64,
        /// The value, or the failure.
        result: Result<FlatData, ToolFailure>,
    },
}

/// The end of a run, as the worker reports it.
#[derive(Debug, Clone, PartialEq, Encode, Decode)]
pub struct Outcome {
    /// The program's value (last expression statement), if it ended in one.
    pub value: Option<FlatData>,
    /// Python `repr` of that value.
    pub repr: Option<String>,
    /// Set when the run failed.
    pub error: Option<WireError>,
    /// Fuel used.
    pub fuel_used: u64,
    /// Plain-data top-level variables the program left (only when `Run`
    /// asked for them), in slot order; bounded in total by `result_bytes`.
    pub globals: Vec<(String, FlatData)>,
    /// Top-level variables not reported: not plain data (iterators, ranges,
    /// views, functions) or beyond the size bound.
    pub skipped_globals: Vec<String>,
}

/// [`ErrorInfo`] in wire form.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct WireError(pub ErrorInfo);

/// Worker → supervisor.
#[derive(Debug, Clone, PartialEq, Encode, Decode)]
pub enum FromWorker {
    /// The jail is in place and the worker waits for `Run`.
    Ready {
        /// Must equal [`PROTOCOL_VERSION`].
        protocol: u32,
    },
    /// A jail step failed; the worker exits after sending this.
    SetupFailed {
        /// The step that failed (e.g. `pivot_root`).
        step: String,
        /// The errno, or 0.
        errno: i32,
        /// Detail for the operator.
        detail: String,
    },
    /// Call a tool; the worker blocks until `ToolResult{id}`.
    ToolCall {
        /// Sequence number, starting at 1.
        id: u64,
        /// Tool name as written in the program.
        name: String,
        /// Positional arguments.
        args: Vec<FlatData>,
        /// Keyword arguments.
        kwargs: Vec<(String, FlatData)>,
    },
    /// A chunk of captured stdout.
    Stdout(String),
    /// The run ended (ok or not). Nothing may follow.
    Done(Outcome),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_roundtrip() {
        let d = Data::Dict(vec![
            (
                Data::Str("a".into()),
                Data::List(vec![Data::Int(1), Data::None]),
            ),
            (
                Data::Tuple(vec![]),
                Data::Set(vec![
                    Data::Float(1.5),
                    Data::BigInt("-99999999999999999999".into()),
                ]),
            ),
        ]);
        let flat = d.to_flat();
        assert_eq!(Data::from_flat(&flat, 10), Ok(d));
    }

    #[test]
    fn flat_rejects_hostile() {
        assert!(matches!(
            Data::from_flat(&FlatData(vec![Node::List(3), Node::None]), 10),
            Err(DataError::Truncated(_))
        ));
        assert_eq!(
            Data::from_flat(&FlatData(vec![Node::None, Node::None]), 10),
            Err(DataError::Trailing)
        );
        let deep = FlatData(vec![Node::List(1); 1000]);
        assert_eq!(Data::from_flat(&deep, 200), Err(DataError::TooDeep(200)));
        assert_eq!(
            Data::from_flat(&FlatData(vec![Node::BigInt("1e5".into())]), 10),
            Err(DataError::BadBigInt)
        );
        // A huge declared count must not pre-allocate.
        assert!(Data::from_flat(&FlatData(vec![Node::Dict(u32::MAX)]), 10).is_err());
    }
}
