//! The supervisor's side of one run's tool calls: [`authorize`], the one
//! step every `ToolCall` frame of a worker passes before any provider runs.
//!
//! A worker is hostile (it runs untrusted code; assume it is compromised),
//! so nothing it says about a call is taken on trust. [`authorize`] checks,
//! in this order:
//!
//! 1. the per-run tool-call budget (`limit`/`tool_calls`);
//! 2. that the tool is in the run's profile (a call to any other tool is a
//!    protocol violation: the validator refuses such programs, so only a
//!    compromised worker can send one);
//! 3. that every argument decodes within the data depth limit (else a
//!    protocol violation);
//! 4. the binding of positional and keyword arguments to the spec's
//!    declared arguments (too many, unknown or repeated keywords, a missing
//!    required argument: `BadArgument`, with CPython's wording);
//! 5. the declared type of every argument (`ArgSpec::type_name`): a value
//!    of another type is refused with `BadArgument`, worded as CPython's
//!    `read_file() argument 'path' must be str, not int`.
//!
//! It returns the bound call: the spec and the positional arguments in the
//! spec's order, which is all a provider ever sees.
//!
//! # Declared types
//!
//! Type names are Python annotation strings ([`ArgType::parse`]): `str`,
//! `int`, `float`, `bool`, `None`, `list`, `tuple`, `dict`, `set` (also
//! `frozenset`), parameterised `list[str]`, `tuple[int, ...]`,
//! `tuple[str, int]`, `dict[str, int]`, `set[str]`, the `typing` spellings
//! (`List`, `Dict`, `Tuple`, `Set`, `FrozenSet`, `Optional[X]`,
//! `Union[X, Y]`, an optional `typing.` prefix), `X | Y`, and `Any`, `any`,
//! `object` or an empty string for "anything". Elements of parameterised
//! containers are checked too.
//!
//! Numbers follow Python: `bool` is a subclass of `int`, so an `int`
//! argument accepts `True` (as `isinstance(True, int)` does) and a `bool`
//! argument accepts only `True`/`False` (as `isinstance(1, bool)` does
//! not). A `float` argument also accepts an `int` (and so a `bool`): that is
//! PEP 484's numeric tower, what type checkers accept for a `float`
//! annotation and what a JSON schema `number` (an MCP server's parameter)
//! means, although `isinstance(1, float)` is false.
//!
//! `None` is accepted only where the declared type admits it (`Optional`,
//! `| None`, `Any`) or for an MCP server tool's parameter outside its
//! schema's `required` list ("None leaves it out").
//!
//! An unknown type name (`Path`, `Frob`, a malformed annotation) is a
//! configuration error, not a program error: a call to that tool is refused
//! before its provider runs with `ToolFailed` "tool 'x' is misconfigured:
//! argument 'a' declares unknown type 'Frob' ..." (and a warning on stderr).
//! It fails closed: an argument whose type lackpy cannot check never reaches
//! a provider as if it had been checked. [`check_spec`] reports the same
//! error for a whole spec (for config checks).

use lackpy_policy::config::{ResolvedProfile, ToolSpec};
use lackpy_policy::wire::{Data, FlatData, ToolFailure, MAX_DATA_DEPTH};
use std::fmt;

/// Longest declared type name accepted, in bytes.
/// Why 256: real annotations are a few dozen bytes; this bounds the parser.
const TYPE_NAME_CAP: usize = 256;

/// Deepest nesting of a declared type (`list[list[...]]`).
/// Why 8: real annotations nest two or three levels; this bounds the
/// recursion of both the parser and the value check.
const TYPE_DEPTH_CAP: usize = 8;

/// Longest keyword name echoed back in an error message, in characters.
const SHOWN_NAME_CAP: usize = 64;

/// A declared argument type, parsed from its annotation string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgType {
    /// Anything (`Any`, `object`, no annotation).
    Any,
    /// `None`.
    None,
    /// `bool`.
    Bool,
    /// `int` (accepts `bool`).
    Int,
    /// `float` (accepts `int` and `bool`).
    Float,
    /// `str`.
    Str,
    /// `list[T]` (`list` is `list[Any]`).
    List(Box<ArgType>),
    /// `tuple[T, ...]` (`tuple` is `tuple[Any, ...]`).
    TupleOf(Box<ArgType>),
    /// `tuple[A, B]`: exactly these items.
    TupleFixed(Vec<ArgType>),
    /// `dict[K, V]` (`dict` is `dict[Any, Any]`).
    Dict(Box<ArgType>, Box<ArgType>),
    /// `set[T]` / `frozenset[T]`.
    Set(Box<ArgType>),
    /// `A | B | ...` (`Optional[A]` is `A | None`).
    Union(Vec<ArgType>),
}

/// Why a declared type name could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TypeNameError(String);

impl ArgType {
    /// Parse a Python annotation string (see the module docs for the
    /// names understood).
    ///
    /// # Errors
    /// An unknown name, a malformed annotation, one longer than 256 bytes
    /// or nested deeper than 8 levels.
    pub fn parse(s: &str) -> Result<ArgType, TypeNameError> {
        let t = s.trim();
        if t.is_empty() {
            return Ok(ArgType::Any);
        }
        if t.len() > TYPE_NAME_CAP {
            return Err(TypeNameError(format!(
                "the type annotation is longer than {TYPE_NAME_CAP} bytes"
            )));
        }
        let mut p = Parser {
            s: t.as_bytes(),
            at: 0,
        };
        let ty = p.union(0)?;
        p.skip_ws();
        if p.at != p.s.len() {
            return Err(p.error("unexpected text"));
        }
        Ok(ty)
    }

    /// Whether `None` is a value of this type.
    pub fn admits_none(&self) -> bool {
        match self {
            ArgType::Any | ArgType::None => true,
            ArgType::Union(v) => v.iter().any(ArgType::admits_none),
            _ => false,
        }
    }

    /// Whether `d` is a value of this type (elements of parameterised
    /// containers included). Recursion is bounded by the type's own depth.
    pub fn admits(&self, d: &Data) -> bool {
        match (self, d) {
            (ArgType::Any, _)
            | (ArgType::None, Data::None)
            | (ArgType::Bool, Data::Bool(_))
            | (ArgType::Int, Data::Int(_) | Data::BigInt(_) | Data::Bool(_))
            | (ArgType::Float, Data::Float(_) | Data::Int(_) | Data::BigInt(_) | Data::Bool(_))
            | (ArgType::Str, Data::Str(_)) => true,
            (ArgType::List(t), Data::List(v))
            | (ArgType::TupleOf(t), Data::Tuple(v))
            | (ArgType::Set(t), Data::Set(v)) => {
                **t == ArgType::Any || v.iter().all(|x| t.admits(x))
            }
            (ArgType::TupleFixed(ts), Data::Tuple(v)) => {
                ts.len() == v.len() && ts.iter().zip(v).all(|(t, x)| t.admits(x))
            }
            (ArgType::Dict(k, val), Data::Dict(items)) => {
                (**k == ArgType::Any && **val == ArgType::Any)
                    || items.iter().all(|(a, b)| k.admits(a) && val.admits(b))
            }
            (ArgType::Union(ts), _) => ts.iter().any(|t| t.admits(d)),
            _ => false,
        }
    }

    /// Whether `d`'s own (outer) type matches, ignoring elements: used to
    /// word the error (`must be list[str], not list` vs `..., not int`).
    fn admits_outer(&self, d: &Data) -> bool {
        match (self, d) {
            (ArgType::List(_), Data::List(_))
            | (ArgType::TupleOf(_) | ArgType::TupleFixed(_), Data::Tuple(_))
            | (ArgType::Dict(..), Data::Dict(_))
            | (ArgType::Set(_), Data::Set(_)) => true,
            (ArgType::Union(ts), _) => ts.iter().any(|t| t.admits_outer(d)),
            _ => self.admits(d),
        }
    }
}

impl fmt::Display for ArgType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |f: &mut fmt::Formatter<'_>, v: &[ArgType], sep: &str| -> fmt::Result {
            for (i, t) in v.iter().enumerate() {
                if i > 0 {
                    f.write_str(sep)?;
                }
                write!(f, "{t}")?;
            }
            Ok(())
        };
        match self {
            ArgType::Any => f.write_str("Any"),
            ArgType::None => f.write_str("None"),
            ArgType::Bool => f.write_str("bool"),
            ArgType::Int => f.write_str("int"),
            ArgType::Float => f.write_str("float"),
            ArgType::Str => f.write_str("str"),
            ArgType::List(t) if **t == ArgType::Any => f.write_str("list"),
            ArgType::List(t) => write!(f, "list[{t}]"),
            ArgType::TupleOf(t) if **t == ArgType::Any => f.write_str("tuple"),
            ArgType::TupleOf(t) => write!(f, "tuple[{t}, ...]"),
            ArgType::TupleFixed(ts) => {
                f.write_str("tuple[")?;
                join(f, ts, ", ")?;
                f.write_str("]")
            }
            ArgType::Dict(k, v) if **k == ArgType::Any && **v == ArgType::Any => {
                f.write_str("dict")
            }
            ArgType::Dict(k, v) => write!(f, "dict[{k}, {v}]"),
            ArgType::Set(t) if **t == ArgType::Any => f.write_str("set"),
            ArgType::Set(t) => write!(f, "set[{t}]"),
            ArgType::Union(ts) => join(f, ts, " | "),
        }
    }
}

/// A tiny recursive-descent parser of annotation strings; depth-capped.
struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn error(&self, what: &str) -> TypeNameError {
        TypeNameError(format!("{what} at offset {}", self.at))
    }

    fn skip_ws(&mut self) {
        while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        if self.s.get(self.at) == Some(&c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// `primary ('|' primary)*`
    fn union(&mut self, depth: usize) -> Result<ArgType, TypeNameError> {
        if depth > TYPE_DEPTH_CAP {
            return Err(TypeNameError(format!(
                "the type annotation nests deeper than {TYPE_DEPTH_CAP} levels"
            )));
        }
        let mut members = vec![self.primary(depth)?];
        while self.eat(b'|') {
            members.push(self.primary(depth)?);
        }
        Ok(union_of(members))
    }

    /// A dotted name, optionally followed by `[args]`.
    fn primary(&mut self, depth: usize) -> Result<ArgType, TypeNameError> {
        self.skip_ws();
        let start = self.at;
        while self
            .s
            .get(self.at)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.')
        {
            self.at += 1;
        }
        if start == self.at {
            return Err(self.error("expected a type name"));
        }
        let full = std::str::from_utf8(&self.s[start..self.at]).unwrap_or("");
        let name = full
            .strip_prefix("typing.")
            .or_else(|| full.strip_prefix("builtins."))
            .unwrap_or(full);
        let params = if self.eat(b'[') {
            let mut v = Vec::new();
            loop {
                self.skip_ws();
                if self.s[self.at..].starts_with(b"...") {
                    self.at += 3;
                    v.push(None);
                } else {
                    v.push(Some(self.union(depth + 1)?));
                }
                if self.eat(b']') {
                    break;
                }
                if !self.eat(b',') {
                    return Err(self.error("expected ',' or ']'"));
                }
            }
            Some(v)
        } else {
            None
        };
        build(name, params).map_err(|why| TypeNameError(format!("{full:?}: {why}")))
    }
}

/// A union, flattened and without repeats; a single member is itself.
fn union_of(members: Vec<ArgType>) -> ArgType {
    let mut flat: Vec<ArgType> = Vec::new();
    for m in members {
        let parts = match m {
            ArgType::Union(v) => v,
            other => vec![other],
        };
        for p in parts {
            if !flat.contains(&p) {
                flat.push(p);
            }
        }
    }
    if flat.len() == 1 {
        flat.pop().unwrap_or(ArgType::Any)
    } else {
        ArgType::Union(flat)
    }
}

/// The type a name (with its `[...]` parameters, `None` for `...`) denotes.
fn build(name: &str, params: Option<Vec<Option<ArgType>>>) -> Result<ArgType, String> {
    // Parameters without `...`, for the generics that do not take it.
    let plain = |params: Vec<Option<ArgType>>| -> Result<Vec<ArgType>, String> {
        params
            .into_iter()
            .map(|p| p.ok_or_else(|| "'...' is only allowed in tuple[T, ...]".to_string()))
            .collect()
    };
    let one = |params: Option<Vec<Option<ArgType>>>| -> Result<ArgType, String> {
        match params {
            None => Ok(ArgType::Any),
            Some(p) => match plain(p)?.as_slice() {
                [t] => Ok(t.clone()),
                _ => Err("takes exactly one type parameter".into()),
            },
        }
    };
    let has_params = params.is_some();
    let bare = |t: ArgType| -> Result<ArgType, String> {
        if has_params {
            Err("takes no type parameters".into())
        } else {
            Ok(t)
        }
    };
    match name {
        "Any" | "any" | "object" => bare(ArgType::Any),
        "None" | "NoneType" => bare(ArgType::None),
        "bool" => bare(ArgType::Bool),
        "int" => bare(ArgType::Int),
        "float" => bare(ArgType::Float),
        "str" => bare(ArgType::Str),
        "list" | "List" => Ok(ArgType::List(Box::new(one(params)?))),
        "set" | "Set" | "frozenset" | "FrozenSet" => Ok(ArgType::Set(Box::new(one(params)?))),
        "dict" | "Dict" => match params {
            None => Ok(ArgType::Dict(
                Box::new(ArgType::Any),
                Box::new(ArgType::Any),
            )),
            Some(p) => match plain(p)?.as_slice() {
                [k, v] => Ok(ArgType::Dict(Box::new(k.clone()), Box::new(v.clone()))),
                _ => Err("takes exactly two type parameters".into()),
            },
        },
        "tuple" | "Tuple" => match params {
            None => Ok(ArgType::TupleOf(Box::new(ArgType::Any))),
            Some(p) => match p.as_slice() {
                [Some(t), None] => Ok(ArgType::TupleOf(Box::new(t.clone()))),
                _ => Ok(ArgType::TupleFixed(plain(p)?)),
            },
        },
        "Optional" => Ok(union_of(vec![one(params)?, ArgType::None])),
        "Union" => match params {
            Some(p) if !p.is_empty() => Ok(union_of(plain(p)?)),
            _ => Err("takes at least one type parameter".into()),
        },
        _ => Err(
            "unknown type name (known: str, int, float, bool, None, list, tuple, dict, set, \
                  frozenset, Any, object, Optional[...], Union[...], X | Y)"
                .into(),
        ),
    }
}

/// The declared types of `spec`'s arguments, in order.
///
/// # Errors
/// `ToolFailed` naming the tool, the argument and its declared type when a
/// type name is unknown or malformed (a configuration error).
pub fn check_spec(alias: &str, spec: &ToolSpec) -> Result<Vec<ArgType>, ToolFailure> {
    spec.args
        .iter()
        .map(|a| {
            ArgType::parse(&a.type_name).map_err(|e| {
                if first_warning(&spec.name, &a.name, &a.type_name) {
                    tracing::warn!(
                        tool = %spec.name,
                        arg = %a.name,
                        declared = %a.type_name,
                        "tool argument declares an unknown type: calls are refused"
                    );
                }
                ToolFailure::new(
                    "ToolFailed",
                    format!(
                        "tool {alias:?} is misconfigured: argument {:?} declares type {:?}, \
                         which lackpy cannot check ({e}); fix its `args` in the config",
                        a.name, a.type_name
                    ),
                )
            })
        })
        .collect()
}

/// Whether this (tool, argument, type) has not been warned about yet in
/// this process (a program calling a misconfigured tool in a loop must not
/// flood stderr). Remembers at most 1024 of them.
fn first_warning(tool: &str, arg: &str, ty: &str) -> bool {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static SEEN: Mutex<Option<HashSet<(String, String, String)>>> = Mutex::new(None);
    let Ok(mut g) = SEEN.lock() else {
        return false;
    };
    let seen = g.get_or_insert_with(HashSet::new);
    let key = (tool.to_string(), arg.to_string(), ty.to_string());
    if seen.contains(&key) || seen.len() >= 1024 {
        return false;
    }
    seen.insert(key);
    true
}

/// A tool call as [`authorize`] accepted it.
#[derive(Debug)]
pub struct BoundCall<'p> {
    /// The tool's spec (from the run's profile).
    pub spec: &'p ToolSpec,
    /// Positional arguments in the spec's order (keywords placed, types checked).
    pub args: Vec<Data>,
}

/// Why [`authorize`] refused a call.
#[derive(Debug)]
pub enum Refusal {
    /// Only a compromised worker sends this (a tool outside the profile, an
    /// undecodable argument): kill the worker, end the run with
    /// `internal`/`ProtocolViolation`.
    Violation(String),
    /// The call is one past the run's budget: end the run with
    /// `limit`/`tool_calls`.
    OverBudget {
        /// The budget.
        limit: u64,
    },
    /// A call the program got wrong: answer it with this tool error
    /// (`BadArgument`, or `ToolFailed` for a misconfigured tool), never
    /// executed, and trace it with `args` (the decoded arguments, keywords
    /// placed where they could be).
    Refused {
        /// The error the program sees.
        failure: ToolFailure,
        /// The arguments to show in the trace.
        args: Vec<Data>,
    },
}

/// One `ToolCall` frame's content, as the worker sent it.
#[derive(Debug, Clone, Copy)]
pub struct CallFrame<'a> {
    /// The name the program called (an alias of the profile).
    pub name: &'a str,
    /// Positional arguments.
    pub args: &'a [FlatData],
    /// Keyword arguments.
    pub kwargs: &'a [(String, FlatData)],
}

/// Authorize one tool call of a run (see the module docs): `call_no` is the
/// 1-based number of this call in the run, `max_calls` the run's budget.
///
/// # Errors
/// A [`Refusal`]; no provider has run.
pub fn authorize<'p>(
    profile: &'p ResolvedProfile,
    call_no: u64,
    max_calls: u64,
    call: CallFrame<'_>,
) -> Result<BoundCall<'p>, Refusal> {
    authorize_with(
        profile,
        call_no,
        max_calls,
        call,
        &mut DeclaredTypes::new(profile),
    )
}

/// The declared argument types of one profile's tools, each parsed
/// ([`check_spec`]) the first time a call to that tool is authorized and
/// kept, by the tool's index in the profile, for the rest of the run.
///
/// Why: a run's calls usually repeat a few tools; parsing each annotation
/// again on every call was a measurable part of a tool call's crossing.
/// The check itself is unchanged: every call's every argument is still
/// checked against its type.
#[derive(Debug)]
pub(crate) struct DeclaredTypes(Vec<Option<Result<Vec<ArgType>, ToolFailure>>>);

impl DeclaredTypes {
    /// Nothing parsed yet, for the tools of `profile`.
    pub(crate) fn new(profile: &ResolvedProfile) -> Self {
        DeclaredTypes(vec![None; profile.tools.len()])
    }
}

/// [`authorize`], with the declared types of the run's tools kept in
/// `types` (which must have been made for the same `profile`) from call to
/// call.
///
/// # Errors
/// As [`authorize`].
pub(crate) fn authorize_with<'p>(
    profile: &'p ResolvedProfile,
    call_no: u64,
    max_calls: u64,
    call: CallFrame<'_>,
    types: &mut DeclaredTypes,
) -> Result<BoundCall<'p>, Refusal> {
    if call_no > max_calls {
        return Err(Refusal::OverBudget { limit: max_calls });
    }
    let name = call.name;
    let found = profile
        .tools
        .iter()
        .enumerate()
        .find(|(_, (alias, _))| alias == name);
    let Some((index, (_, spec))) = found else {
        return Err(Refusal::Violation(format!(
            "called tool {:?}, which profile {:?} does not grant",
            shown(name),
            profile.name
        )));
    };
    let decode = |a: &FlatData| {
        Data::from_flat(a, MAX_DATA_DEPTH)
            .map_err(|e| Refusal::Violation(format!("malformed argument to {name}: {e}")))
    };
    let positional = call
        .args
        .iter()
        .map(decode)
        .collect::<Result<Vec<_>, _>>()?;
    let kwargs = call
        .kwargs
        .iter()
        .map(|(k, a)| Ok((k.clone(), decode(a)?)))
        .collect::<Result<Vec<_>, Refusal>>()?;
    let refused = |failure: ToolFailure, args: Vec<Data>| Refusal::Refused { failure, args };
    // A `DeclaredTypes` made for another profile has no slot here: parse.
    let mut parsed = None;
    let slot = match types.0.get_mut(index) {
        Some(slot) => slot,
        None => &mut parsed,
    };
    let types = match slot.get_or_insert_with(|| check_spec(name, spec)) {
        Ok(t) => &*t,
        Err(f) => return Err(refused(f.clone(), positional)),
    };
    let args = bind(name, spec, positional, kwargs).map_err(|(f, shown)| refused(f, shown))?;
    for (i, (d, ty)) in args.iter().zip(types).enumerate() {
        if ty.admits(d) || (*d == Data::None && optional_arg(spec, i)) {
            continue;
        }
        let arg = spec.args.get(i).map_or("?", |a| a.name.as_str());
        let what = if ty.admits_outer(d) {
            format!("{} with an item of another type", d.type_name())
        } else {
            d.type_name().to_string()
        };
        return Err(refused(
            ToolFailure::new(
                "BadArgument",
                format!("{name}() argument '{arg}' must be {ty}, not {what}"),
            ),
            args,
        ));
    }
    Ok(BoundCall { spec, args })
}

/// A name from a frame, cut for an error message.
fn shown(s: &str) -> String {
    if s.chars().count() <= SHOWN_NAME_CAP {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(SHOWN_NAME_CAP).collect();
        t.push('…');
        t
    }
}

/// Whether a trailing argument the call leaves off is left to the tool:
/// a `python` function or a `virtual` host tool applies its own defaults
/// (the python helper binds the call to the function's signature and
/// reports a missing argument itself); an MCP server's parameter outside
/// its schema's `required` list is left out. Every other provider's
/// declared arguments are all required.
fn callee_defaults(spec: &ToolSpec, i: usize) -> bool {
    matches!(spec.provider.as_str(), "python" | "virtual") || optional_arg(spec, i)
}

/// Place positional and keyword arguments by the spec's argument names,
/// with CPython's messages for what does not bind. On error, the values
/// are handed back (in the order placed so far) for the trace.
fn bind(
    name: &str,
    spec: &ToolSpec,
    positional: Vec<Data>,
    kwargs: Vec<(String, Data)>,
) -> Result<Vec<Data>, (ToolFailure, Vec<Data>)> {
    // Never execute a call with more arguments than the spec declares (a
    // hostile worker gains nothing; a program's mistake gets a clear error).
    let arity = spec.args.len();
    if positional.len() > arity {
        let (n, m) = (positional.len(), arity);
        let plural = |k: usize| if k == 1 { "" } else { "s" };
        let were = if n == 1 { "was" } else { "were" };
        let f = ToolFailure::new(
            "BadArgument",
            format!(
                "{name}() takes {m} positional argument{} but {n} {were} given",
                plural(m)
            ),
        );
        return Err((f, positional));
    }
    let mut slots: Vec<Option<Data>> = positional.into_iter().map(Some).collect();
    slots.resize(arity, None);
    let back = |slots: Vec<Option<Data>>| slots.into_iter().flatten().collect::<Vec<_>>();
    for (k, v) in kwargs {
        let Some(i) = spec.args.iter().position(|a| a.name == k) else {
            let f = ToolFailure::new(
                "BadArgument",
                format!(
                    "{name}() got an unexpected keyword argument '{}'",
                    shown(&k)
                ),
            );
            return Err((f, back(slots)));
        };
        if slots[i].is_some() {
            let f = ToolFailure::new(
                "BadArgument",
                format!("{name}() got multiple values for argument '{k}'"),
            );
            return Err((f, back(slots)));
        }
        slots[i] = Some(v);
    }
    // A gap before the last argument given is filled with None only for an
    // MCP server tool's optional parameter (None leaves it out); arguments
    // after it are left off when the tool applies its own defaults
    // ([`callee_defaults`]); anything else missing is an error.
    let given_upto = slots.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
    let missing = slots.iter().enumerate().position(|(i, s)| {
        s.is_none()
            && !(i < given_upto && optional_arg(spec, i))
            && !(i >= given_upto && callee_defaults(spec, i))
    });
    if let Some(i) = missing {
        let arg = spec.args.get(i).map_or("?", |a| a.name.as_str());
        let f = ToolFailure::new(
            "BadArgument",
            format!("{name}() missing required argument: '{arg}'"),
        );
        return Err((f, back(slots)));
    }
    Ok(slots
        .into_iter()
        .take(given_upto)
        .map(|s| s.unwrap_or(Data::None))
        .collect())
}

/// Whether argument `i` of `spec` may be left out (and may be `None`): only
/// an MCP server tool's parameters outside its schema's `required` list.
fn optional_arg(spec: &ToolSpec, i: usize) -> bool {
    let Some(arg) = spec.args.get(i) else {
        return false;
    };
    spec.provider == "mcp" && !crate::providers::mcp::is_required(spec, &arg.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lackpy_policy::config::ArgSpec;
    use lackpy_policy::wire::Limits;

    fn s(x: &str) -> Data {
        Data::Str(x.into())
    }

    fn tool(name: &str, provider: &str, args: &[(&str, &str)]) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            provider: provider.into(),
            args: args
                .iter()
                .map(|(n, t)| ArgSpec {
                    name: (*n).into(),
                    type_name: (*t).into(),
                    description: String::new(),
                })
                .collect(),
            ..ToolSpec::default()
        }
    }

    fn profile(tools: Vec<ToolSpec>) -> ResolvedProfile {
        ResolvedProfile {
            name: "p".into(),
            tools: tools.into_iter().map(|t| (t.name.clone(), t)).collect(),
            limits: Limits::default(),
        }
    }

    /// Authorize `name(*args, **kwargs)` as the first call of a run.
    fn auth(
        p: &ResolvedProfile,
        name: &str,
        args: &[Data],
        kw: &[(&str, Data)],
    ) -> Result<Vec<Data>, Refusal> {
        let args: Vec<FlatData> = args.iter().map(Data::to_flat).collect();
        let kwargs: Vec<(String, FlatData)> = kw
            .iter()
            .map(|(k, v)| ((*k).to_string(), v.to_flat()))
            .collect();
        authorize(
            p,
            1,
            10,
            CallFrame {
                name,
                args: &args,
                kwargs: &kwargs,
            },
        )
        .map(|c| c.args)
    }

    /// The refusal message of a call the program got wrong.
    fn refused(r: Result<Vec<Data>, Refusal>) -> (String, String) {
        match r {
            Err(Refusal::Refused { failure, .. }) => (failure.type_name, failure.message),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    /// Whether a one-argument tool declared with `ty` accepts `d`.
    fn accepts(ty: &str, d: Data) -> bool {
        let p = profile(vec![tool("t", "command", &[("a", ty)])]);
        match auth(&p, "t", &[d], &[]) {
            Ok(_) => true,
            Err(Refusal::Refused { failure, .. }) => {
                assert_eq!(failure.type_name, "BadArgument", "{}", failure.message);
                false
            }
            Err(other) => panic!("{other:?}"),
        }
    }

    #[test]
    fn scalar_types_follow_isinstance() {
        let big = Data::BigInt("123456789012345678901234567890".into());
        // str
        assert!(accepts("str", s("x")));
        for d in [
            Data::Int(1),
            Data::Bool(true),
            Data::None,
            Data::Float(1.0),
            Data::List(vec![]),
        ] {
            assert!(!accepts("str", d));
        }
        // int: bool is an int subclass (isinstance(True, int) is True)
        assert!(accepts("int", Data::Int(-3)));
        assert!(accepts("int", big.clone()));
        assert!(accepts("int", Data::Bool(false)));
        assert!(!accepts("int", Data::Float(1.0)));
        assert!(!accepts("int", s("1")));
        assert!(!accepts("int", Data::None));
        // bool: only True/False (isinstance(1, bool) is False)
        assert!(accepts("bool", Data::Bool(true)));
        assert!(!accepts("bool", Data::Int(1)));
        assert!(!accepts("bool", s("True")));
        // float: PEP 484's numeric tower (int, and so bool, is acceptable)
        assert!(accepts("float", Data::Float(0.5)));
        assert!(accepts("float", Data::Int(2)));
        assert!(accepts("float", big));
        assert!(accepts("float", Data::Bool(true)));
        assert!(!accepts("float", s("0.5")));
        // None
        assert!(accepts("None", Data::None));
        assert!(!accepts("None", Data::Int(0)));
        // Any and the empty annotation accept everything, None included
        for ty in ["", "Any", "any", "object", "typing.Any"] {
            assert!(accepts(ty, Data::None), "{ty}");
            assert!(
                accepts(ty, Data::Dict(vec![(s("k"), Data::Set(vec![]))])),
                "{ty}"
            );
        }
    }

    #[test]
    fn container_types_and_their_elements() {
        let l = |v: Vec<Data>| Data::List(v);
        let t = |v: Vec<Data>| Data::Tuple(v);
        assert!(accepts("list", l(vec![Data::Int(1), s("x")])));
        assert!(!accepts("list", t(vec![])));
        assert!(!accepts("list", s("abc")));
        assert!(accepts("list[str]", l(vec![s("a"), s("b")])));
        assert!(accepts("list[str]", l(vec![])));
        assert!(accepts("List[str]", l(vec![s("a")])));
        assert!(accepts("typing.List[str]", l(vec![s("a")])));
        assert!(!accepts("list[str]", l(vec![s("a"), Data::Int(1)])));
        assert!(accepts("list[list[int]]", l(vec![l(vec![Data::Int(1)])])));
        assert!(!accepts("list[list[int]]", l(vec![l(vec![s("x")])])));
        assert!(accepts("list[dict]", l(vec![Data::Dict(vec![])])));
        assert!(accepts("tuple", t(vec![Data::Int(1), s("x")])));
        assert!(!accepts("tuple", l(vec![])));
        assert!(accepts(
            "tuple[int, ...]",
            t(vec![Data::Int(1), Data::Int(2)])
        ));
        assert!(!accepts("tuple[int, ...]", t(vec![Data::Int(1), s("2")])));
        assert!(accepts("Tuple[str, int]", t(vec![s("a"), Data::Int(2)])));
        assert!(!accepts("tuple[str, int]", t(vec![s("a")])));
        assert!(!accepts("tuple[str, int]", t(vec![Data::Int(2), s("a")])));
        let d = |v: Vec<(Data, Data)>| Data::Dict(v);
        assert!(accepts("dict", d(vec![(Data::Int(1), Data::None)])));
        assert!(!accepts("dict", l(vec![])));
        assert!(accepts("dict[str, int]", d(vec![(s("a"), Data::Int(1))])));
        assert!(accepts("Dict[str, Any]", d(vec![(s("a"), Data::None)])));
        assert!(!accepts("dict[str, int]", d(vec![(s("a"), s("1"))])));
        assert!(!accepts(
            "dict[str, int]",
            d(vec![(Data::Int(0), Data::Int(1))])
        ));
        assert!(accepts("set[int]", Data::Set(vec![Data::Int(1)])));
        assert!(accepts("frozenset", Data::Set(vec![])));
        assert!(!accepts("set", l(vec![])));
    }

    #[test]
    fn optional_and_union_types() {
        for ty in [
            "Optional[str]",
            "str | None",
            "None | str",
            "Union[str, None]",
            "typing.Optional[str]",
        ] {
            assert!(accepts(ty, s("x")), "{ty}");
            assert!(accepts(ty, Data::None), "{ty}");
            assert!(!accepts(ty, Data::Int(1)), "{ty}");
        }
        assert!(accepts("int | str", Data::Int(1)));
        assert!(accepts("Union[int, str]", s("x")));
        assert!(!accepts("int | str", Data::None));
        assert!(accepts("Optional[list[str]]", Data::List(vec![s("a")])));
        assert!(!accepts(
            "Optional[list[str]]",
            Data::List(vec![Data::None])
        ));
        assert!(accepts(
            "list[str | None]",
            Data::List(vec![Data::None, s("a")])
        ));
    }

    #[test]
    fn type_errors_read_like_cpython() {
        let p = profile(vec![
            crate::tools::builtin_spec("read_file").unwrap(),
            crate::tools::builtin_spec("write_file").unwrap(),
            tool(
                "many",
                "command",
                &[("paths", "list[str]"), ("n", "Optional[int]")],
            ),
        ]);
        assert_eq!(
            refused(auth(&p, "read_file", &[Data::Int(1)], &[])),
            (
                "BadArgument".into(),
                "read_file() argument 'path' must be str, not int".into()
            )
        );
        assert_eq!(
            refused(auth(&p, "write_file", &[s("a"), Data::Bool(true)], &[])).1,
            "write_file() argument 'content' must be str, not bool"
        );
        assert_eq!(
            refused(auth(
                &p,
                "write_file",
                &[s("a")],
                &[("content", Data::None)]
            ))
            .1,
            "write_file() argument 'content' must be str, not NoneType"
        );
        assert_eq!(
            refused(auth(
                &p,
                "many",
                &[Data::List(vec![Data::Int(1)]), Data::None],
                &[]
            ))
            .1,
            "many() argument 'paths' must be list[str], not list with an item of another type"
        );
        assert_eq!(
            refused(auth(&p, "many", &[Data::List(vec![]), s("3")], &[])).1,
            "many() argument 'n' must be int | None, not str"
        );
        assert!(auth(&p, "many", &[Data::List(vec![s("a")]), Data::None], &[]).is_ok());
    }

    #[test]
    fn arity_and_keywords() {
        let p = profile(vec![
            crate::tools::builtin_spec("read_file").unwrap(),
            crate::tools::builtin_spec("write_file").unwrap(),
        ]);
        // Keywords are placed by name; the bound call is positional.
        assert_eq!(
            auth(
                &p,
                "write_file",
                &[],
                &[("content", s("c")), ("path", s("p"))]
            )
            .unwrap(),
            vec![s("p"), s("c")]
        );
        assert_eq!(
            auth(&p, "write_file", &[s("p")], &[("content", s("c"))]).unwrap(),
            vec![s("p"), s("c")]
        );
        assert_eq!(
            refused(auth(&p, "read_file", &[s("a"), s("b")], &[])).1,
            "read_file() takes 1 positional argument but 2 were given"
        );
        assert_eq!(
            refused(auth(&p, "read_file", &[], &[])).1,
            "read_file() missing required argument: 'path'"
        );
        assert_eq!(
            refused(auth(&p, "write_file", &[s("p")], &[])).1,
            "write_file() missing required argument: 'content'"
        );
        assert_eq!(
            refused(auth(&p, "write_file", &[], &[("content", s("c"))])).1,
            "write_file() missing required argument: 'path'"
        );
        assert_eq!(
            refused(auth(
                &p,
                "read_file",
                &[],
                &[("path", s("a")), ("follow", Data::Bool(true))]
            ))
            .1,
            "read_file() got an unexpected keyword argument 'follow'"
        );
        assert_eq!(
            refused(auth(&p, "read_file", &[s("a")], &[("path", s("b"))])).1,
            "read_file() got multiple values for argument 'path'"
        );
        // A huge keyword name is cut in the message.
        let long = "k".repeat(10_000);
        let (_, msg) = refused(auth(&p, "read_file", &[], &[(long.as_str(), s("a"))]));
        assert!(msg.len() < 200, "{msg}");
        // A zero-argument tool given one.
        let p0 = profile(vec![tool("z", "command", &[])]);
        assert_eq!(
            refused(auth(&p0, "z", &[Data::Int(1)], &[])).1,
            "z() takes 0 positional arguments but 1 was given"
        );
        assert_eq!(auth(&p0, "z", &[], &[]).unwrap(), Vec::<Data>::new());
    }

    #[test]
    fn trailing_defaults_are_the_callees_for_python_virtual_and_mcp() {
        for provider in ["python", "virtual"] {
            let p = profile(vec![tool("f", provider, &[("a", "int"), ("b", "int")])]);
            // Left off: the function's own default applies.
            assert_eq!(
                auth(&p, "f", &[Data::Int(1)], &[]).unwrap(),
                vec![Data::Int(1)]
            );
            assert_eq!(auth(&p, "f", &[], &[]).unwrap(), Vec::<Data>::new());
            // A gap cannot be expressed positionally.
            assert!(refused(auth(&p, "f", &[], &[("b", Data::Int(2))]))
                .1
                .contains("'a'"));
            // Types are still checked.
            assert_eq!(
                refused(auth(&p, "f", &[s("x")], &[])).1,
                "f() argument 'a' must be int, not str"
            );
        }
        let mut mcp = tool(
            "rt",
            "mcp",
            &[("path", "str"), ("head", "int"), ("tail", "int")],
        );
        mcp.provider_config
            .insert("required".into(), serde_json::json!(["path"]));
        let p = profile(vec![mcp]);
        // A gap before a given optional parameter is None (left out).
        assert_eq!(
            auth(&p, "rt", &[], &[("path", s("p")), ("tail", Data::Int(2))]).unwrap(),
            vec![s("p"), Data::None, Data::Int(2)]
        );
        // An optional parameter may be None explicitly; a required one not.
        assert!(auth(&p, "rt", &[s("p"), Data::None], &[]).is_ok());
        assert!(refused(auth(&p, "rt", &[Data::None], &[]))
            .1
            .contains("must be str, not NoneType"));
        // The required parameter may not be left out.
        assert!(refused(auth(&p, "rt", &[], &[("tail", Data::Int(2))]))
            .1
            .contains("'path'"));
        assert!(refused(auth(&p, "rt", &[], &[])).1.contains("'path'"));
        assert!(refused(auth(&p, "rt", &[s("p"), s("2")], &[]))
            .1
            .contains("'head' must be int"));
    }

    /// The declared types a run keeps from call to call give every call
    /// the answer a fresh parse gives: each call is checked, a
    /// misconfigured tool is refused every time, tools are told apart.
    #[test]
    fn types_kept_across_a_runs_calls_check_every_call() {
        let p = profile(vec![
            tool("t", "command", &[("a", "int")]),
            tool("u", "command", &[("a", "str")]),
            tool("bad", "command", &[("a", "Frob")]),
        ]);
        let mut types = DeclaredTypes::new(&p);
        let mut call = |name: &str, d: Data| {
            let args = [d.to_flat()];
            let frame = CallFrame {
                name,
                args: &args,
                kwargs: &[],
            };
            authorize_with(&p, 1, 10, frame, &mut types).map(|c| c.args)
        };
        for _ in 0..3 {
            assert_eq!(call("t", Data::Int(1)).unwrap(), vec![Data::Int(1)]);
            assert_eq!(
                refused(call("t", s("x"))).1,
                "t() argument 'a' must be int, not str"
            );
            assert_eq!(call("u", s("x")).unwrap(), vec![s("x")]);
            assert_eq!(
                refused(call("u", Data::Int(1))).1,
                "u() argument 'a' must be str, not int"
            );
            let (ty, msg) = refused(call("bad", Data::Int(1)));
            assert_eq!(ty, "ToolFailed");
            assert!(msg.contains("tool \"bad\" is misconfigured"), "{msg}");
        }
        // Types made for a smaller profile: the tool beyond them is parsed.
        let small = profile(vec![tool("t", "command", &[("a", "int")])]);
        let mut few = DeclaredTypes::new(&small);
        let args = [Data::Int(1).to_flat()];
        let frame = CallFrame {
            name: "u",
            args: &args,
            kwargs: &[],
        };
        assert_eq!(
            refused(authorize_with(&p, 1, 10, frame, &mut few).map(|c| c.args)).1,
            "u() argument 'a' must be str, not int"
        );
    }

    #[test]
    fn budget_profile_and_malformed_frames() {
        let p = profile(vec![crate::tools::builtin_spec("read_file").unwrap()]);
        let args = [s("a").to_flat()];
        let frame = CallFrame {
            name: "read_file",
            args: &args,
            kwargs: &[],
        };
        assert!(authorize(&p, 3, 3, frame).is_ok());
        assert!(matches!(
            authorize(&p, 4, 3, frame),
            Err(Refusal::OverBudget { limit: 3 })
        ));
        // The budget is checked first, even for a tool outside the profile.
        let other = CallFrame {
            name: "write_file",
            ..frame
        };
        assert!(matches!(
            authorize(&p, 4, 3, other),
            Err(Refusal::OverBudget { .. })
        ));
        assert!(
            matches!(authorize(&p, 1, 3, other), Err(Refusal::Violation(m)) if m.contains("does not grant"))
        );
        // An argument that does not decode: a violation, not a tool error.
        let bad = [FlatData(vec![lackpy_policy::wire::Node::List(3)])];
        let r = authorize(
            &p,
            1,
            3,
            CallFrame {
                args: &bad,
                ..frame
            },
        );
        assert!(matches!(r, Err(Refusal::Violation(m)) if m.contains("malformed argument")));
        let kw = [("path".to_string(), FlatData(vec![]))];
        let r = authorize(
            &p,
            1,
            3,
            CallFrame {
                args: &[],
                kwargs: &kw,
                ..frame
            },
        );
        assert!(matches!(r, Err(Refusal::Violation(_))));
    }

    #[test]
    fn unknown_declared_types_are_config_errors() {
        for ty in [
            "Path",
            "Frob",
            "list[",
            "list[str",
            "dict[str]",
            "str |",
            "Optional[int, str]",
            "tuple[...]",
            "int[str]",
            "list[str]]",
            "a b",
        ] {
            let p = profile(vec![tool("t", "command", &[("a", ty)])]);
            let (kind, msg) = refused(auth(&p, "t", &[s("x")], &[]));
            assert_eq!(kind, "ToolFailed", "{ty}: {msg}");
            assert!(msg.contains("tool \"t\" is misconfigured"), "{ty}: {msg}");
            assert!(msg.contains(&format!("{ty:?}")), "{ty}: {msg}");
        }
        // Overlong and overdeep annotations are refused, never a stack overflow.
        let deep = format!("{}str{}", "list[".repeat(10_000), "]".repeat(10_000));
        assert!(ArgType::parse(&deep).is_err());
        let nested = format!("{}str{}", "list[".repeat(40), "]".repeat(40));
        assert!(ArgType::parse(&nested).is_err());
        let ok = format!("{}str{}", "list[".repeat(8), "]".repeat(8));
        assert!(ArgType::parse(&ok).is_ok());
        // check_spec names the tool and the type for config checks.
        let e = check_spec("t", &tool("t", "command", &[("a", "Path")])).unwrap_err();
        assert!(e.message.contains("\"Path\""), "{}", e.message);
    }

    #[test]
    fn every_shipped_builtin_declares_checkable_types() {
        let cfg = lackpy_policy::config::Config::parse(
            lackpy_policy::config::DEFAULT_TOOLS_TOML,
            std::path::Path::new("<default_tools>"),
        )
        .unwrap();
        let p = cfg
            .resolve(
                None,
                Some(
                    &crate::tools::NAMES
                        .iter()
                        .map(|b| b.to_string())
                        .collect::<Vec<_>>(),
                ),
                &lackpy_policy::config::Kits::default(),
            )
            .unwrap();
        for (alias, spec) in &p.tools {
            let types = check_spec(alias, spec).unwrap();
            assert!(types.iter().all(|t| *t == ArgType::Str), "{alias}");
        }
    }

    #[test]
    fn types_display_as_written() {
        for (src, shown) in [
            ("str", "str"),
            ("Optional[str]", "str | None"),
            ("List[str]", "list[str]"),
            ("Dict[str, int]", "dict[str, int]"),
            ("tuple[int, ...]", "tuple[int, ...]"),
            ("Tuple[int, str]", "tuple[int, str]"),
            ("Union[int, Union[str, None]]", "int | str | None"),
            ("object", "Any"),
        ] {
            assert_eq!(ArgType::parse(src).unwrap().to_string(), shown, "{src}");
        }
    }
}
