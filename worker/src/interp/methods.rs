//! Each allowlisted method's CPython semantics. The allowlist itself is
//! defined once, in `lackpy_policy::lang::METHODS` (the validator's table);
//! [`has_method`] dispatches exactly those, and a test keeps the two equal.

use super::budget::{mem_check, mem_check_n, mem_left, tick};
use super::err::{type_err, value_err, Exc, InterpResult};
use super::eval::{as_i64, slice_adjust, CallArgs, Interp};
use super::ops::{eq, lt};
use super::unicode as uc;
use super::value::{
    hash_value, mem_charge, Dict, PyStr, Value, ViewKind, ENTRY, INLINE, OBJ, SLOT,
};

named_enum! {
    /// Every allowlisted method name.
    Method:
    Capitalize = "capitalize", Casefold = "casefold", Center = "center", Count = "count",
    Endswith = "endswith", Expandtabs = "expandtabs", Find = "find", Index = "index",
    Isalnum = "isalnum", Isalpha = "isalpha", Isascii = "isascii", Isdecimal = "isdecimal",
    Isdigit = "isdigit", Isidentifier = "isidentifier", Islower = "islower", Isnumeric = "isnumeric",
    Isspace = "isspace", Istitle = "istitle", Isupper = "isupper", Join = "join", Ljust = "ljust",
    Lower = "lower", Lstrip = "lstrip", Partition = "partition", Removeprefix = "removeprefix",
    Removesuffix = "removesuffix", Replace = "replace", Rfind = "rfind", Rindex = "rindex",
    Rjust = "rjust", Rpartition = "rpartition", Rsplit = "rsplit", Rstrip = "rstrip", Split = "split",
    Splitlines = "splitlines", Startswith = "startswith", Strip = "strip", Swapcase = "swapcase",
    Title = "title", Upper = "upper", Zfill = "zfill",
    Append = "append", Clear = "clear", Copy = "copy", Extend = "extend", Insert = "insert",
    Pop = "pop", Remove = "remove", Reverse = "reverse", Sort = "sort",
    Get = "get", Items = "items", Keys = "keys", Popitem = "popitem", Setdefault = "setdefault",
    Update = "update", Values = "values",
    Add = "add", Difference = "difference", DifferenceUpdate = "difference_update", Discard = "discard",
    Intersection = "intersection", IntersectionUpdate = "intersection_update", Isdisjoint = "isdisjoint",
    Issubset = "issubset", Issuperset = "issuperset", SymmetricDifference = "symmetric_difference",
    Union = "union",
    BitLength = "bit_length", IsInteger = "is_integer",
}

/// Does `v`'s type have method `m` on the allowlist?
pub fn has_method(v: &Value, m: Method) -> bool {
    use Method::*;
    match v {
        Value::Str(_) => matches!(
            m,
            Capitalize
                | Casefold
                | Center
                | Count
                | Endswith
                | Expandtabs
                | Find
                | Index
                | Isalnum
                | Isalpha
                | Isascii
                | Isdecimal
                | Isdigit
                | Isidentifier
                | Islower
                | Isnumeric
                | Isspace
                | Istitle
                | Isupper
                | Join
                | Ljust
                | Lower
                | Lstrip
                | Partition
                | Removeprefix
                | Removesuffix
                | Replace
                | Rfind
                | Rindex
                | Rjust
                | Rpartition
                | Rsplit
                | Rstrip
                | Split
                | Splitlines
                | Startswith
                | Strip
                | Swapcase
                | Title
                | Upper
                | Zfill
        ),
        Value::List(_) => matches!(
            m,
            Append | Clear | Copy | Count | Extend | Index | Insert | Pop | Remove | Reverse | Sort
        ),
        Value::Dict(_) => matches!(
            m,
            Clear | Copy | Get | Items | Keys | Pop | Popitem | Setdefault | Update | Values
        ),
        Value::Set(_) => matches!(
            m,
            Add | Clear
                | Copy
                | Difference
                | DifferenceUpdate
                | Discard
                | Intersection
                | IntersectionUpdate
                | Isdisjoint
                | Issubset
                | Issuperset
                | Pop
                | Remove
                | SymmetricDifference
                | Union
                | Update
        ),
        Value::Tuple(_) | Value::Range(_) => matches!(m, Count | Index),
        // Set-like dict views: of set's allowlisted methods CPython gives
        // them `isdisjoint` only.
        Value::Keys(_) | Value::Items(_) => m == Isdisjoint,
        Value::Int(_) | Value::Big(_) | Value::Bool(_) => m == BitLength,
        Value::Float(_) => m == IsInteger,
        _ => false,
    }
}

/// A method's qualified name (`str.upper`), rendered only when an error
/// message needs it (building it eagerly cost an allocation per call).
#[derive(Clone, Copy)]
struct Qual(&'static str, Method);

impl std::fmt::Display for Qual {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.0, self.1.name())
    }
}

fn no_args(a: &CallArgs, qual: impl std::fmt::Display) -> InterpResult<()> {
    if !a.kw.is_empty() {
        return Err(type_err(format!("{qual}() takes no keyword arguments")));
    }
    if !a.pos.is_empty() {
        return Err(type_err(format!(
            "{qual}() takes no arguments ({} given)",
            a.pos.len()
        )));
    }
    Ok(())
}

/// The checks whose messages differ when a method is called through a bound
/// method object (`x.m(*args)`, `x.m(**kw)`, `key=x.m`) rather than directly
/// (CPython 3.11 calls the method descriptor then, LOAD_METHOD): the bound
/// builtin is named after the receiver's own type (`bool.bit_length()`, where
/// a direct call says `int.bit_length()`), and a METH_VARARGS method refuses
/// keywords with its bare name (`union() takes no keyword arguments`).
///
/// # Errors
/// Those TypeErrors.
pub(crate) fn bound_call_checks(recv: &Value, m: Method, a: &CallArgs) -> InterpResult<()> {
    use Method::*;
    if let (Value::Bool(_), BitLength) = (recv, m) {
        no_args(a, "bool.bit_length")?;
    }
    if !a.kw.is_empty() {
        let varargs = match recv {
            Value::Str(_) => matches!(
                m,
                Startswith | Endswith | Find | Rfind | Index | Rindex | Count
            ),
            Value::Set(_) => matches!(
                m,
                Update | Union | Intersection | IntersectionUpdate | Difference | DifferenceUpdate
            ),
            _ => false,
        };
        if varargs {
            return Err(type_err(format!(
                "{}() takes no keyword arguments",
                m.name()
            )));
        }
    }
    Ok(())
}

/// The position of the element of `r` equal to `x`, if any. Only numbers
/// equal ints, and a range holds each value once, so `count` is 0 or 1 and
/// `index` needs no scan (CPython scans for non-int `x`, with the same result).
fn range_position(r: &super::value::RangeV, x: &Value) -> Option<i128> {
    use num_traits::ToPrimitive;
    // Range bounds stay within ±2^100 (`RANGE_BOUND`): anything beyond is outside.
    const LIMIT: f64 = 1.6e30;
    let v: i128 = match x {
        Value::Int(i) => i128::from(*i),
        Value::Bool(b) => i128::from(*b),
        Value::Big(b) => b.to_i128()?,
        Value::Float(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < LIMIT => *f as i128,
        _ => return None,
    };
    let inside = if r.step > 0 {
        v >= r.start && v < r.stop
    } else {
        v <= r.start && v > r.stop
    };
    (inside && (v - r.start) % r.step == 0).then(|| (v - r.start) / r.step)
}

fn one_arg(a: &mut CallArgs, qual: impl std::fmt::Display) -> InterpResult<Value> {
    if !a.kw.is_empty() {
        return Err(type_err(format!("{qual}() takes no keyword arguments")));
    }
    if a.pos.len() != 1 {
        return Err(type_err(format!(
            "{qual}() takes exactly one argument ({} given)",
            a.pos.len()
        )));
    }
    Ok(a.pos.remove(0))
}

fn range_args(a: &CallArgs, name: &str, min: usize, max: usize) -> InterpResult<()> {
    a.no_kw(name)?;
    let n = a.pos.len();
    if n < min {
        if min == max {
            return Err(type_err(format!(
                "{name} expected {min} argument{}, got {n}",
                if min == 1 { "" } else { "s" }
            )));
        }
        return Err(type_err(format!(
            "{name} expected at least {min} argument{}, got {n}",
            if min == 1 { "" } else { "s" }
        )));
    }
    if n > max {
        return Err(type_err(format!(
            "{name} expected {}{max} argument{}, got {n}",
            if min == max { "" } else { "at most " },
            if max == 1 { "" } else { "s" }
        )));
    }
    Ok(())
}

/// Positional-only arity as `PyArg_ParseTuple` words it (`find() takes at
/// least 1 argument (0 given)`), for the str methods CPython 3.11 still
/// parses that way (find, index, count, startswith, ...).
fn tuple_args(a: &CallArgs, name: &str, min: usize, max: usize) -> InterpResult<()> {
    a.no_kw(name)?;
    tuple_arity(a.pos.len(), name, min, max)
}

/// [`tuple_args`]' arity check alone, for `n` positional arguments.
fn tuple_arity(n: usize, name: &str, min: usize, max: usize) -> InterpResult<()> {
    let (how, k) = if n < min {
        (if min == max { "exactly" } else { "at least" }, min)
    } else if n > max {
        (if min == max { "exactly" } else { "at most" }, max)
    } else {
        return Ok(());
    };
    Err(type_err(format!(
        "{name}() takes {how} {k} argument{} ({n} given)",
        if k == 1 { "" } else { "s" }
    )))
}

/// `list.index`/`tuple.index` bounds (`_PyEval_SliceIndexNotNone`): ints
/// only, not None; out-of-range ints clamp (in [`slice_adjust`]).
fn index_bounds_ok(pos: &[Value]) -> InterpResult<()> {
    for v in pos.iter().skip(1) {
        if !matches!(v, Value::Int(_) | Value::Bool(_) | Value::Big(_)) {
            return Err(type_err(
                "slice indices must be integers or have an __index__ method",
            ));
        }
    }
    Ok(())
}

fn as_index(v: &Value) -> InterpResult<i64> {
    if let Value::Big(_) = v {
        return Err(Exc::py(
            "OverflowError",
            "Python int too large to convert to C ssize_t",
        ));
    }
    as_i64(v).ok_or_else(|| {
        type_err(format!(
            "'{}' object cannot be interpreted as an integer",
            v.type_name()
        ))
    })
}

fn str_arg<'v>(v: &'v Value, msg: &str) -> InterpResult<&'v str> {
    match v {
        Value::Str(s) => Ok(s.as_str()),
        _ => Err(type_err(format!("{msg}{}", v.type_name()))),
    }
}

/// [`str_arg`] for an argument-clinic parameter: CPython names `None`
/// itself there ("must be str, not None"), other values by type.
fn clinic_str_arg<'v>(v: &'v Value, msg: &str) -> InterpResult<&'v str> {
    match v {
        Value::None => Err(type_err(format!("{msg}None"))),
        _ => str_arg(v, msg),
    }
}

/// Python's `str.isspace` for one character.
pub fn py_isspace(c: char) -> bool {
    uc::has(c, uc::SPACE)
}

fn is_linebreak(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\x0b'
            | '\x0c'
            | '\x1c'
            | '\x1d'
            | '\x1e'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

fn is_cased(c: char) -> bool {
    uc::has(c, uc::CASED)
}

fn py_islower(s: &str) -> bool {
    all_cased_as(s, uc::LOWER, uc::UPPER | uc::TITLE)
}

fn py_isupper(s: &str) -> bool {
    all_cased_as(s, uc::UPPER, uc::LOWER | uc::TITLE)
}

/// CPython's `islower`/`isupper`: no character of the `other` cases and
/// at least one of case `want`.
fn all_cased_as(s: &str, want: u16, other: u16) -> bool {
    let mut cased = false;
    for c in s.chars() {
        if uc::has(c, other) {
            return false;
        }
        if uc::has(c, want) {
            cased = true;
        }
    }
    cased
}

/// `s` with each character (and its byte offset) mapped by `f` into the
/// result: the shape of every case conversion below.
fn map_str(s: &str, mut f: impl FnMut(usize, char, &mut String)) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.char_indices() {
        f(i, c, &mut out);
    }
    out
}

fn upper_str(s: &str) -> String {
    map_str(s, |_, c, o| uc::upper(c, o))
}

/// CPython's `handle_capital_sigma`: is the capital sigma at byte `i` of
/// `s` in the Final_Sigma context (a cased letter before it and none after
/// it, skipping case-ignorable characters both ways)?
fn final_sigma(s: &str, i: usize) -> bool {
    let skip = |c: &char| !uc::has(*c, uc::CASE_IGNORABLE);
    let before = s.get(..i).and_then(|b| b.chars().rev().find(skip));
    if !before.is_some_and(is_cased) {
        return false;
    }
    let after = s
        .get(i + '\u{3a3}'.len_utf8()..)
        .and_then(|a| a.chars().find(skip));
    !after.is_some_and(is_cased)
}

/// CPython's `lower_ucs4`: the lower-case mapping of `c` at byte `i` of
/// `s`, with the final-sigma rule.
fn lower_at(s: &str, i: usize, c: char, out: &mut String) {
    if c == '\u{3a3}' {
        out.push(if final_sigma(s, i) {
            '\u{3c2}'
        } else {
            '\u{3c3}'
        });
    } else {
        uc::lower(c, out);
    }
}

fn lower_str(s: &str) -> String {
    map_str(s, |i, c, o| lower_at(s, i, c, o))
}

fn title_str(s: &str) -> String {
    let mut prev_cased = false;
    map_str(s, |i, c, o| {
        if prev_cased {
            lower_at(s, i, c, o);
        } else {
            uc::title(c, o);
        }
        prev_cased = is_cased(c);
    })
}

fn istitle(s: &str) -> bool {
    let mut cased = false;
    let mut prev_cased = false;
    for c in s.chars() {
        if uc::has(c, uc::UPPER | uc::TITLE) {
            if prev_cased {
                return false;
            }
            prev_cased = true;
            cased = true;
        } else if uc::has(c, uc::LOWER) {
            if !prev_cased {
                return false;
            }
            prev_cased = true;
            cased = true;
        } else {
            prev_cased = false;
        }
    }
    cased
}

fn strip_chars<'s>(s: &'s str, chars: Option<&str>, left: bool, right: bool) -> &'s str {
    let f = |c: char| match chars {
        Some(cs) => cs.contains(c),
        None => py_isspace(c),
    };
    let mut r = s;
    if left {
        r = r.trim_start_matches(f);
    }
    if right {
        r = r.trim_end_matches(f);
    }
    r
}

/// Python's `str.isspace` for one ASCII byte.
#[inline]
fn ascii_isspace(b: u8) -> bool {
    matches!(b, b'\t'..=b'\r' | 0x1c..=b' ')
}

/// A str value from text known to be ASCII.
#[inline]
fn ascii_str(s: String) -> Value {
    let n = s.len();
    Value::Str(PyStr::rc_string(s, n))
}

/// Whitespace split (sep=None) of ASCII text: each piece, in order, to `f`.
fn split_ws_ascii(s: &str, maxsplit: i64, f: &mut dyn FnMut(&str) -> bool) {
    let b = s.as_bytes();
    let mut i = 0;
    let mut n = 0;
    while i < b.len() && ascii_isspace(b[i]) {
        i += 1;
    }
    while i < b.len() {
        if maxsplit >= 0 && n >= maxsplit {
            f(s.get(i..).unwrap_or_default());
            return;
        }
        let start = i;
        while i < b.len() && !ascii_isspace(b[i]) {
            i += 1;
        }
        if !f(s.get(start..i).unwrap_or_default()) {
            return;
        }
        n += 1;
        while i < b.len() && ascii_isspace(b[i]) {
            i += 1;
        }
    }
}

/// Bytes of text scanned per whitespace mask in [`split_ws_ascii_all`].
const WS_BLOCK: usize = 64;

/// Bit k set when byte k of `block` is ASCII whitespace (`str.isspace`
/// on ASCII); bytes past the block's end count as whitespace. Branch-free,
/// so the compiler can compare a whole block at once.
#[inline]
fn ws_mask(block: &[u8]) -> u64 {
    let mut buf = [b' '; WS_BLOCK];
    let n = block.len().min(WS_BLOCK);
    buf[..n].copy_from_slice(&block[..n]);
    // One 0/1 byte per text byte (no branches: the compiler compares 16
    // bytes at a time), then each 8 flags gathered into 8 bits: multiplying
    // by 0x0102040810204080 moves flag byte i to bit 56 + i (no carries, the
    // partial products are distinct bits).
    let mut flags = [0u8; WS_BLOCK];
    for (f, &b) in flags.iter_mut().zip(buf.iter()) {
        *f = u8::from(b.wrapping_sub(b'\t') < 5) | u8::from(b.wrapping_sub(0x1c) < 5);
    }
    let mut m = 0u64;
    for (j, eight) in flags.chunks_exact(8).enumerate() {
        let mut w = [0u8; 8];
        w.copy_from_slice(eight);
        let w = u64::from_le_bytes(w);
        m |= (w.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * j);
    }
    m
}

/// The word boundaries of one block given its whitespace mask and whether
/// the byte before the block was whitespace: bits where a word starts
/// (not whitespace, whitespace before) and where one ends (whitespace,
/// not whitespace before).
#[inline]
fn ws_edges(ws: u64, ws_before: bool) -> (u64, u64) {
    let prev_ws = (ws << 1) | u64::from(ws_before);
    (!ws & prev_ws, ws & !prev_ws)
}

/// `str.split()` (no sep, no maxsplit) of ASCII text, as a list value.
///
/// The text is scanned a block of [`WS_BLOCK`] bytes at a time as a
/// whitespace bit mask, whose word starts and ends are walked bit by bit:
/// a byte-by-byte scan mispredicts a branch at every word boundary, this
/// one once a block. A first pass counts the words and their bytes with
/// popcounts (nothing allocated), so the memory and fuel checks are the
/// ones [`str_list`] makes (same totals, same order) and the list gets its
/// exact capacity; the second pass builds the strs.
///
/// # Errors
/// `memory` or `fuel` limit error.
fn split_ws_ascii_all(s: &str) -> InterpResult<Value> {
    let b = s.as_bytes();
    let (mut n, mut bytes, mut ws_before) = (0usize, 0usize, true);
    for block in b.chunks(WS_BLOCK) {
        let ws = ws_mask(block);
        let (starts, _) = ws_edges(ws, ws_before);
        n += starts.count_ones() as usize;
        bytes += (!ws).count_ones() as usize;
        ws_before = ws >> (WS_BLOCK - 1) != 0;
    }
    strs_preflight(n, bytes)?;
    // The strs' bytes are charged once here, not per str (each is charged
    // its `len + OBJ`, as `rc_copy` would, and gives that back when dropped).
    mem_charge(bytes + n * OBJ);
    let mut out = Vec::with_capacity(n);
    let (mut start, mut ws_before) = (0usize, true);
    for (i, block) in b.chunks(WS_BLOCK).enumerate() {
        let base = i * WS_BLOCK;
        let ws = ws_mask(block);
        let (starts, ends) = ws_edges(ws, ws_before);
        ws_before = ws >> (WS_BLOCK - 1) != 0;
        let mut edges = starts | ends;
        while edges != 0 {
            let at = base + edges.trailing_zeros() as usize;
            if starts & (edges & edges.wrapping_neg()) != 0 {
                start = at;
            } else {
                let p = s.get(start..at).unwrap_or_default();
                out.push(Value::Str(PyStr::rc_copy_precharged(p, p.len())));
            }
            edges &= edges - 1;
        }
    }
    // A word running to the end of a text whose length is a multiple of
    // the block (shorter blocks are padded with whitespace, which ends it).
    if !ws_before {
        let p = s.get(start..).unwrap_or_default();
        out.push(Value::Str(PyStr::rc_copy_precharged(p, p.len())));
    }
    // Both passes read the same masks: the pieces are the ones charged.
    debug_assert_eq!(out.len(), n);
    Ok(Value::list(out))
}

/// Whitespace split (sep=None): each piece to `f`, in order, or last
/// first when `rev` (`str.rsplit`).
fn split_ws(s: &str, maxsplit: i64, rev: bool, f: &mut dyn FnMut(&str) -> bool) {
    fn trim(t: &str, rev: bool) -> &str {
        if rev {
            t.trim_end_matches(py_isspace)
        } else {
            t.trim_start_matches(py_isspace)
        }
    }
    let mut rest = trim(s, rev);
    let mut n = 0;
    while !rest.is_empty() {
        if maxsplit >= 0 && n >= maxsplit {
            f(rest);
            return;
        }
        let found = if rev {
            rest.rfind(py_isspace)
        } else {
            rest.find(py_isspace)
        };
        let Some(i) = found else {
            f(rest);
            return;
        };
        let (piece, left) = if rev {
            let c = rest[i..].chars().next().map_or(1, |c| c.len_utf8());
            (&rest[i + c..], &rest[..i])
        } else {
            (&rest[..i], &rest[i..])
        };
        if !f(piece) {
            return;
        }
        rest = trim(left, rev);
        n += 1;
    }
}

/// `str.splitlines`: each line, in order, to `f` (with its line break when `keep`).
fn split_lines(s: &str, keep: bool, f: &mut dyn FnMut(&str) -> bool) {
    let mut start = 0;
    let mut it = s.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if is_linebreak(c) {
            let mut end = i + c.len_utf8();
            if c == '\r' && matches!(it.peek(), Some((_, '\n'))) {
                it.next();
                end += 1;
            }
            if !f(s.get(start..if keep { end } else { i }).unwrap_or_default()) {
                return;
            }
            start = end;
        }
    }
    if start < s.len() {
        f(s.get(start..).unwrap_or_default());
    }
}

/// Preflight `count` new str values holding `bytes` bytes of text in all,
/// each in a list slot: what the values will be charged, checked against
/// the memory budget before anything is allocated, and their fuel.
///
/// # Errors
/// `memory` or `fuel` limit error.
fn strs_preflight(count: usize, bytes: usize) -> InterpResult<()> {
    mem_check(
        (count as u64)
            .saturating_mul((SLOT + OBJ) as u64)
            .saturating_add(bytes as u64),
    )?;
    tick(count as u64 / 16)
}

/// A list of new str values, one per piece `pieces` emits. `pieces` runs
/// twice: once to count the pieces and their bytes (nothing allocated; it
/// stops as soon as they would not fit the memory budget, so the count costs
/// no more than the budget allows), and, once that fits, again to build
/// them. `pieces` stops when its callback returns false. `rev`: the pieces
/// come last first; `ascii`: the text split is ASCII (no code points to count).
///
/// # Errors
/// `memory` or `fuel` limit error.
fn str_list(
    rev: bool,
    ascii: bool,
    pieces: impl Fn(&mut dyn FnMut(&str) -> bool),
) -> InterpResult<Value> {
    let left = mem_left();
    let per = (SLOT + OBJ) as u64;
    let (mut n, mut need) = (0usize, 0u64);
    pieces(&mut |p| {
        n += 1;
        need = need.saturating_add(per + p.len() as u64);
        need <= left
    });
    mem_check(need)?;
    tick(n as u64 / 16)?;
    let mut out = Vec::with_capacity(n);
    pieces(&mut |p| {
        out.push(if ascii {
            Value::Str(PyStr::rc_copy(p, p.len()))
        } else {
            Value::str(p)
        });
        true
    });
    if rev {
        out.reverse();
    }
    Ok(Value::list(out))
}

/// Byte range of the code-point slice [start:end] of `s` (CPython's
/// find/count semantics); `start` and `end` are `pos[1]` and `pos[2]`,
/// None when absent.
fn sub_range(s: &super::value::PyStr, pos: &[Value]) -> InterpResult<Option<(usize, usize)>> {
    let none = Value::None;
    let (start, end) = (pos.get(1).unwrap_or(&none), pos.get(2).unwrap_or(&none));
    if matches!((start, end), (Value::None, Value::None)) {
        return Ok(Some((0, s.len())));
    }
    let (a, b, _) = slice_adjust(start, end, &Value::None, s.nchars)?;
    // find() with start > len returns -1 even for an empty needle.
    if matches!(start, Value::Big(b) if b.sign() == num_bigint::Sign::Plus) {
        return Ok(None);
    }
    if let Some(st) = as_i64(start) {
        let st = if st < 0 {
            (st + s.nchars as i64).max(0)
        } else {
            st
        };
        if st > s.nchars as i64 {
            return Ok(None);
        }
    }
    if b < a {
        return Ok(None);
    }
    Ok(Some((s.byte_offset(a as usize), s.byte_offset(b as usize))))
}

fn char_index(s: &str, byte: usize) -> i64 {
    if s.is_ascii() {
        byte as i64
    } else {
        s[..byte].chars().count() as i64
    }
}

fn fill_char(a: &CallArgs, i: usize) -> InterpResult<char> {
    match a.pos.get(i) {
        None => Ok(' '),
        Some(Value::Str(s)) => {
            if s.nchars != 1 {
                return Err(type_err(
                    "The fill character must be exactly one character long",
                ));
            }
            s.as_str()
                .chars()
                .next()
                .ok_or_else(|| type_err("The fill character must be exactly one character long"))
        }
        Some(v) => Err(type_err(format!(
            "The fill character must be a unicode character, not {}",
            v.type_name()
        ))),
    }
}

/// `sep.join(items)` once the items are at hand.
fn join_strs(sep: &str, items: &[Value]) -> InterpResult<Value> {
    let mut total = 0usize;
    for (i, x) in items.iter().enumerate() {
        match x {
            Value::Str(p) => total += p.len() + sep.len(),
            _ => {
                return Err(type_err(format!(
                    "sequence item {i}: expected str instance, {} found",
                    x.type_name()
                )))
            }
        }
    }
    mem_check(total as u64)?;
    tick(items.len() as u64 + total as u64 / 256)?;
    // Bytes, validated once at the end: `as_str` re-validated every
    // short str as UTF-8 (`from_utf8`, 2 % of a 60,000-item join).
    let mut out: Vec<u8> = Vec::with_capacity(total);
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(sep.as_bytes());
        }
        if let Value::Str(p) = x {
            out.extend_from_slice(p.as_bytes());
        }
    }
    // UTF-8 texts back to back are UTF-8: this never fails.
    let out = String::from_utf8(out).map_err(|_| Exc::internal("join of non-UTF-8 text"))?;
    Ok(Value::str(out))
}

/// `str.startswith`/`endswith`, and `upper`/`lower`/one-byte `replace` of
/// short ASCII text, on bytes (the same results, errors and charges as
/// [`Interp::str_method`]'s general arms), or None when the general arm must
/// answer. Nothing is charged or ticked before it returns None.
fn str_method_bytes(
    recv: &Value,
    ps: &PyStr,
    m: Method,
    pos: &[Value],
    no_kw: bool,
) -> Option<InterpResult<Value>> {
    match m {
        // A keyword argument: the general arm words the TypeError.
        Method::Startswith | Method::Endswith if no_kw => Some(starts_ends_with(ps, m, pos)),
        Method::Upper | Method::Lower
            if ps.is_ascii() && ps.len() <= INLINE && pos.is_empty() && no_kw =>
        {
            let b = ps.as_bytes();
            if let Err(e) = mem_check(b.len() as u64 * 3) {
                return Some(Err(e));
            }
            let up = m == Method::Upper;
            PyStr::ascii_inline(b.len(), |out| {
                for (o, c) in out.iter_mut().zip(b) {
                    *o = if up {
                        c.to_ascii_uppercase()
                    } else {
                        c.to_ascii_lowercase()
                    };
                }
            })
            .map(Ok)
        }
        Method::Replace if ps.is_ascii() && pos.len() == 2 && no_kw => {
            let (Value::Str(old), Value::Str(new)) = (&pos[0], &pos[1]) else {
                return None;
            };
            let (&[b], true) = (old.as_bytes(), new.is_ascii()) else {
                return None;
            };
            if !b.is_ascii() {
                return None;
            }
            let hay = ps.as_bytes();
            let nb = new.as_bytes();
            let n = hay.iter().filter(|x| **x == b).count();
            // Each of the n matches is one byte, replaced by `new`.
            let exact = hay.len() - n + n * nb.len();
            if n > 0 && exact > INLINE {
                return None;
            }
            let est = hay.len() as u64 + (n as u64).saturating_mul(nb.len() as u64);
            if let Err(e) = mem_check(est).and_then(|()| tick(est / 256)) {
                return Some(Err(e));
            }
            if n == 0 {
                // Nothing replaced: CPython returns the same object.
                return Some(Ok(recv.clone()));
            }
            PyStr::ascii_inline(exact, |out| {
                let mut k = 0;
                for x in hay {
                    if *x == b {
                        for (o, c) in out.iter_mut().skip(k).zip(nb) {
                            *o = *c;
                        }
                        k += nb.len();
                    } else {
                        if let Some(o) = out.get_mut(k) {
                            *o = *x;
                        }
                        k += 1;
                    }
                }
            })
            .map(Ok)
        }
        _ => None,
    }
}

/// `upper`/`lower`/one-byte-for-one-byte `replace` of short ASCII text
/// that nothing else refers to (the caller holds the only reference, so no
/// new object is observable): rewritten in place, with the same ticks,
/// checks and errors as [`Interp::str_method`] (the str's charge does not
/// change: same length). Some(Ok(())) when done; None, with nothing ticked
/// or changed, when the general path must answer.
pub fn str_method_in_place(
    ps: &mut PyStr,
    m: Method,
    pos: &[Value],
    no_kw: bool,
) -> Option<InterpResult<()>> {
    if !ps.is_ascii() || !ps.can_append_inline(0) || !no_kw {
        return None;
    }
    let pre = 1 + ps.len() as u64 / 64;
    let r = match (m, pos) {
        (Method::Upper | Method::Lower, []) => {
            let up = m == Method::Upper;
            tick(pre)
                .and_then(|()| mem_check(ps.len() as u64 * 3))
                .map(|()| {
                    ps.map_ascii_inline(|c| {
                        if up {
                            c.to_ascii_uppercase()
                        } else {
                            c.to_ascii_lowercase()
                        }
                    });
                })
        }
        (Method::Replace, [Value::Str(old), Value::Str(new)]) => {
            let (&[from], &[to]) = (old.as_bytes(), new.as_bytes()) else {
                return None;
            };
            if !from.is_ascii() || !to.is_ascii() {
                return None;
            }
            let n = ps.as_bytes().iter().filter(|x| **x == from).count();
            let est = ps.len() as u64 + n as u64;
            tick(pre)
                .and_then(|()| mem_check(est))
                .and_then(|()| tick(est / 256))
                .map(|()| {
                    ps.map_ascii_inline(|c| if c == from { to } else { c });
                })
        }
        _ => return None,
    };
    Some(r)
}

/// A str method call whose receiver is read in place from its variable
/// and whose arguments are the call's constants (`w.startswith(('a',
/// 'b'))`, `w.upper()`): no reference taken on the receiver, no argument
/// vector built. The same ticks, checks, results and errors as the general
/// path (the method call's tick, then [`Interp::str_method`]'s); None, with
/// nothing ticked, for the calls it does not answer.
#[inline]
pub fn str_method_borrowed(
    recv: &Value,
    ps: &PyStr,
    m: Method,
    pos: &[Value],
) -> Option<InterpResult<Value>> {
    // Exactly the calls `str_method_bytes` answers whatever the text.
    let answers = match m {
        Method::Startswith | Method::Endswith => true,
        Method::Upper | Method::Lower => ps.is_ascii() && ps.len() <= INLINE && pos.is_empty(),
        _ => false,
    };
    if !answers {
        return None;
    }
    if let Err(e) = tick(1).and_then(|()| tick(1 + ps.len() as u64 / 64)) {
        return Some(Err(e));
    }
    Some(
        str_method_bytes(recv, ps, m, pos, true)
            .unwrap_or_else(|| Err(Exc::internal("borrowed str method not answered"))),
    )
}

/// `str.startswith` / `str.endswith`. On bytes: a UTF-8 prefix/suffix test
/// is a byte test, so no prefix is re-validated as text.
fn starts_ends_with(ps: &PyStr, m: Method, pos: &[Value]) -> InterpResult<Value> {
    tuple_arity(pos.len(), m.name(), 1, 3)?;
    // An empty range (start past the end) matches nothing, but the
    // prefixes are still type-checked, as CPython does.
    let range = sub_range(ps, pos)?;
    let hay = range
        .and_then(|(b0, b1)| ps.as_bytes().get(b0..b1))
        .unwrap_or_default();
    let test = |p: &[u8]| {
        if range.is_none() {
            false
        } else if m == Method::Startswith {
            hay.starts_with(p)
        } else {
            hay.ends_with(p)
        }
    };
    match &pos[0] {
        Value::Str(p) => Ok(Value::Bool(test(p.as_bytes()))),
        Value::Tuple(t) => {
            for x in &t.v {
                match x {
                    Value::Str(p) => {
                        if test(p.as_bytes()) {
                            return Ok(Value::Bool(true));
                        }
                    }
                    _ => {
                        return Err(type_err(format!(
                            "tuple for {} must only contain str, not {}",
                            m.name(),
                            x.type_name()
                        )))
                    }
                }
            }
            Ok(Value::Bool(false))
        }
        other => Err(type_err(format!(
            "{} first arg must be str or a tuple of str, not {}",
            m.name(),
            other.type_name()
        ))),
    }
}

impl<'a> Interp<'a> {
    /// Call method `m` on `recv`.
    ///
    /// # Errors
    /// AttributeError when `recv`'s type has no such allowlisted method;
    /// whatever the method raises.
    pub fn call_method(&mut self, recv: &Value, m: Method, a: CallArgs) -> InterpResult<Value> {
        if !has_method(recv, m) {
            return Err(Exc::py(
                "AttributeError",
                format!(
                    "'{}' object has no attribute '{}'",
                    recv.type_name(),
                    m.name()
                ),
            ));
        }
        self.call_known_method(recv, m, a)
    }

    /// [`Interp::call_method`] once [`has_method`] holds (the caller
    /// checked it: a method call checks before evaluating its arguments).
    ///
    /// # Errors
    /// Whatever the method raises.
    pub fn call_known_method(
        &mut self,
        recv: &Value,
        m: Method,
        a: CallArgs,
    ) -> InterpResult<Value> {
        if !a.kw.is_empty() {
            let takes_kw = match recv {
                Value::Str(_) => matches!(
                    m,
                    Method::Split | Method::Rsplit | Method::Splitlines | Method::Expandtabs
                ),
                Value::List(_) => m == Method::Sort,
                Value::Dict(_) => m == Method::Update,
                _ => false,
            };
            if !takes_kw {
                // bool's methods are int's (`int.bit_length`).
                let owner = match recv {
                    Value::Bool(_) => "int",
                    _ => recv.type_name(),
                };
                return Err(type_err(format!(
                    "{owner}.{}() takes no keyword arguments",
                    m.name()
                )));
            }
        }
        match recv {
            Value::Str(_) => self.str_method(recv, m, a),
            Value::List(_) => self.list_method(recv, m, a),
            Value::Dict(_) => self.dict_method(recv, m, a),
            Value::Set(_) => self.set_method(recv, m, a),
            Value::Tuple(t) => {
                let mut a = a;
                match m {
                    Method::Count => {
                        let x = one_arg(&mut a, "tuple.count")?;
                        let mut n = 0;
                        for item in &t.v {
                            tick(1)?;
                            if item.is(&x) || eq(item, &x)? {
                                n += 1;
                            }
                        }
                        Ok(Value::Int(n))
                    }
                    _ => {
                        range_args(&a, "index", 1, 3)?;
                        index_bounds_ok(&a.pos)?;
                        let x = &a.pos[0];
                        let (s, e, _) = slice_adjust(
                            a.pos.get(1).unwrap_or(&Value::None),
                            a.pos.get(2).unwrap_or(&Value::None),
                            &Value::None,
                            t.v.len(),
                        )?;
                        let mut i = s.max(0);
                        while i < e {
                            tick(1)?;
                            let item = &t.v[i as usize];
                            if item.is(x) || eq(item, x)? {
                                return Ok(Value::Int(i));
                            }
                            i += 1;
                        }
                        Err(value_err("tuple.index(x): x not in tuple"))
                    }
                }
            }
            Value::Range(r) => {
                let mut a = a;
                let x = one_arg(&mut a, Qual("range", m))?;
                tick(1)?;
                let found = range_position(r, &x);
                match (m, found) {
                    (Method::Count, f) => Ok(Value::Int(i64::from(f.is_some()))),
                    (_, Some(i)) => Ok(Value::from_i128(i)),
                    (_, None) if matches!(x, Value::Int(_) | Value::Big(_) | Value::Bool(_)) => {
                        let r = self.repr(&x)?;
                        Err(value_err(format!("{r} is not in range")))
                    }
                    (_, None) => Err(value_err("sequence.index(x): x not in sequence")),
                }
            }
            Value::Int(_) | Value::Big(_) | Value::Bool(_) => {
                no_args(&a, "int.bit_length")?;
                Ok(Value::Int(match recv {
                    Value::Int(i) => 64 - i.unsigned_abs().leading_zeros() as i64,
                    Value::Bool(b) => *b as i64,
                    Value::Big(b) => b.bits() as i64,
                    _ => 0,
                }))
            }
            Value::Float(f) => {
                no_args(&a, "float.is_integer")?;
                Ok(Value::Bool(f.is_finite() && f.fract() == 0.0))
            }
            Value::Keys(d) | Value::Items(d) if m == Method::Isdisjoint => {
                let mut a = a;
                let other = one_arg(&mut a, Qual(recv.type_name(), m))?;
                self.view_isdisjoint(recv, d.d.borrow().len(), other)
            }
            _ => Err(Exc::py(
                "AttributeError",
                format!(
                    "'{}' object has no attribute '{}'",
                    recv.type_name(),
                    m.name()
                ),
            )),
        }
    }

    fn str_method(&mut self, recv: &Value, m: Method, mut a: CallArgs) -> InterpResult<Value> {
        let Value::Str(ps) = recv else {
            return Err(Exc::internal("str method on non-str"));
        };
        tick(1 + ps.len() as u64 / 64)?;
        // The commonest calls on ASCII text, answered on bytes: no UTF-8
        // re-validation of the receiver or the arguments (`as_str`).
        if let Some(r) = str_method_bytes(recv, ps, m, &a.pos, a.kw.is_empty()) {
            return r;
        }
        let s: &str = ps.as_str();
        let qual = |_: &str| Qual("str", m);
        match m {
            Method::Upper
            | Method::Lower
            | Method::Capitalize
            | Method::Casefold
            | Method::Swapcase
            | Method::Title => {
                no_args(&a, qual(m.name()))?;
                mem_check(s.len() as u64 * 3)?;
                let r = match m {
                    // ASCII text: byte-wise case mapping, and the result is
                    // known to be ASCII (no recount of its code points).
                    Method::Upper | Method::Lower if ps.is_ascii() => {
                        let up = m == Method::Upper;
                        let b = s.as_bytes();
                        let short = PyStr::ascii_inline(b.len(), |out| {
                            for (o, c) in out.iter_mut().zip(b) {
                                *o = if up {
                                    c.to_ascii_uppercase()
                                } else {
                                    c.to_ascii_lowercase()
                                };
                            }
                        });
                        return Ok(match short {
                            Some(v) => v,
                            None if up => ascii_str(s.to_ascii_uppercase()),
                            None => ascii_str(s.to_ascii_lowercase()),
                        });
                    }
                    Method::Upper => upper_str(s),
                    Method::Lower => lower_str(s),
                    Method::Casefold => map_str(s, |_, c, o| uc::fold(c, o)),
                    Method::Swapcase => map_str(s, |i, c, o| {
                        if uc::has(c, uc::UPPER) {
                            lower_at(s, i, c, o);
                        } else if uc::has(c, uc::LOWER) {
                            uc::upper(c, o);
                        } else {
                            o.push(c);
                        }
                    }),
                    Method::Title => title_str(s),
                    // The rest is lowered in the context of the whole
                    // string (final sigma looks back at the first char).
                    _ => map_str(s, |i, c, o| {
                        if i == 0 {
                            uc::title(c, o);
                        } else {
                            lower_at(s, i, c, o);
                        }
                    }),
                };
                Ok(Value::str(r))
            }
            Method::Isalnum
            | Method::Isalpha
            | Method::Isascii
            | Method::Isdecimal
            | Method::Isdigit
            | Method::Isidentifier
            | Method::Islower
            | Method::Isnumeric
            | Method::Isspace
            | Method::Istitle
            | Method::Isupper => {
                no_args(&a, qual(m.name()))?;
                let ne = !s.is_empty();
                let b = match m {
                    Method::Isalnum => {
                        ne && s
                            .chars()
                            .all(|c| uc::has(c, uc::ALPHA | uc::DECIMAL | uc::DIGIT | uc::NUMERIC))
                    }
                    Method::Isalpha => ne && s.chars().all(|c| uc::has(c, uc::ALPHA)),
                    Method::Isascii => s.is_ascii(),
                    Method::Isdecimal => ne && s.chars().all(|c| uc::has(c, uc::DECIMAL)),
                    Method::Isdigit => ne && s.chars().all(|c| uc::has(c, uc::DIGIT)),
                    Method::Isnumeric => ne && s.chars().all(|c| uc::has(c, uc::NUMERIC)),
                    Method::Isspace => ne && s.chars().all(py_isspace),
                    Method::Islower => py_islower(s),
                    Method::Isupper => py_isupper(s),
                    Method::Istitle => istitle(s),
                    _ => {
                        let mut cs = s.chars();
                        match cs.next() {
                            Some(f) => {
                                uc::has(f, uc::XID_START) && cs.all(|c| uc::has(c, uc::XID_CONT))
                            }
                            None => false,
                        }
                    }
                };
                Ok(Value::Bool(b))
            }
            Method::Strip | Method::Lstrip | Method::Rstrip => {
                range_args(&a, m.name(), 0, 1)?;
                let chars = match a.pos.first() {
                    None | Some(Value::None) => None,
                    Some(Value::Str(c)) => Some(c.as_str()),
                    Some(_) => {
                        return Err(type_err(format!("{} arg must be None or str", m.name())))
                    }
                };
                let r = strip_chars(s, chars, m != Method::Rstrip, m != Method::Lstrip);
                if r.len() == s.len() {
                    return Ok(recv.clone());
                }
                Ok(Value::str(r))
            }
            Method::Split | Method::Rsplit => {
                let mut it = a
                    .clinic(m.name(), 0, &["sep", "maxsplit"], 0, 2)?
                    .into_iter();
                let sep = it.next().flatten().unwrap_or(Value::None);
                let maxsplit = match it.next().flatten() {
                    Some(v) => as_index(&v)?,
                    None => -1,
                };
                match &sep {
                    Value::None if m == Method::Split && ps.is_ascii() && maxsplit < 0 => {
                        split_ws_ascii_all(s)
                    }
                    Value::None if m == Method::Split && ps.is_ascii() => {
                        str_list(false, true, |f| split_ws_ascii(s, maxsplit, f))
                    }
                    Value::None if m == Method::Split => {
                        str_list(false, false, |f| split_ws(s, maxsplit, false, f))
                    }
                    Value::None => {
                        str_list(true, ps.is_ascii(), |f| split_ws(s, maxsplit, true, f))
                    }
                    Value::Str(sep) => {
                        if sep.is_empty() {
                            return Err(value_err("empty separator"));
                        }
                        let sep = sep.as_str();
                        match (maxsplit < 0, m == Method::Split) {
                            (true, true) => str_list(false, ps.is_ascii(), |f| {
                                s.split(sep).all(&mut *f);
                            }),
                            (true, false) => str_list(true, ps.is_ascii(), |f| {
                                s.rsplit(sep).all(&mut *f);
                            }),
                            (false, true) => str_list(false, ps.is_ascii(), |f| {
                                s.splitn(maxsplit as usize + 1, sep).all(&mut *f);
                            }),
                            (false, false) => str_list(true, ps.is_ascii(), |f| {
                                s.rsplitn(maxsplit as usize + 1, sep).all(&mut *f);
                            }),
                        }
                    }
                    other => Err(type_err(format!(
                        "must be str or None, not {}",
                        other.type_name()
                    ))),
                }
            }
            Method::Splitlines => {
                let keep = match a
                    .clinic("splitlines", 0, &["keepends"], 0, 1)?
                    .pop()
                    .flatten()
                {
                    Some(v) => as_c_int(&v)? != 0,
                    None => false,
                };
                str_list(false, ps.is_ascii(), |f| split_lines(s, keep, f))
            }
            Method::Join => {
                let it = one_arg(&mut a, "str.join")?;
                if !self.is_iterable(&it) {
                    return Err(type_err("can only join an iterable"));
                }
                // A list or tuple is read in place (the same fuel and memory
                // checks as `collect`, without cloning every item).
                match &it {
                    Value::List(l) => {
                        let items = l.v.borrow();
                        tick(1 + items.len() as u64 / 16)?;
                        mem_check_n(items.len() as u64, SLOT as u64)?;
                        join_strs(s, &items)
                    }
                    Value::Tuple(t) => {
                        tick(1 + t.v.len() as u64 / 16)?;
                        mem_check_n(t.v.len() as u64, SLOT as u64)?;
                        join_strs(s, &t.v)
                    }
                    _ => {
                        let items = self.collect(&it)?;
                        join_strs(s, &items)
                    }
                }
            }
            Method::Replace => {
                range_args(&a, "replace", 2, 3)?;
                let old = clinic_str_arg(&a.pos[0], "replace() argument 1 must be str, not ")?;
                let new = clinic_str_arg(&a.pos[1], "replace() argument 2 must be str, not ")?;
                let count = match a.pos.get(2) {
                    Some(v) => as_index(v)?,
                    None => -1,
                };
                // One ASCII byte replaced by ASCII text: byte loops (a
                // substring searcher costs more to set up than it saves).
                let byte = match (old.as_bytes(), new.is_ascii()) {
                    ([b], true) if b.is_ascii() => Some(*b),
                    _ => None,
                };
                let occurrences = if old.is_empty() {
                    ps.nchars + 1
                } else if let Some(b) = byte {
                    s.bytes().filter(|x| *x == b).count()
                } else {
                    s.matches(old).count()
                };

                let n = if count < 0 {
                    occurrences
                } else {
                    occurrences.min(count as usize)
                };
                let est = s.len() as u64 + (n as u64).saturating_mul(new.len() as u64);
                mem_check(est)?;
                tick(est / 256)?;
                if n == 0 {
                    // Nothing replaced: CPython returns the same object.
                    return Ok(recv.clone());
                }
                let r = if old.is_empty() {
                    let mut out = String::with_capacity(est as usize);
                    let mut done = 0;
                    for c in s.chars() {
                        if done < n {
                            out.push_str(new);
                            done += 1;
                        }
                        out.push(c);
                    }
                    if done < n {
                        out.push_str(new);
                    }
                    out
                } else if let (Some(b), true) = (byte, ps.is_ascii() && n == occurrences) {
                    // Short result: written straight into the new str.
                    let nb = new.as_bytes();
                    // Each of the n matches is one byte, replaced by `new`.
                    let exact = s.len() - n + n * nb.len();
                    let short = PyStr::ascii_inline(exact, |out| {
                        let mut k = 0;
                        for x in s.bytes() {
                            if x == b {
                                for (o, c) in out.iter_mut().skip(k).zip(nb) {
                                    *o = *c;
                                }
                                k += nb.len();
                            } else {
                                if let Some(o) = out.get_mut(k) {
                                    *o = x;
                                }
                                k += 1;
                            }
                        }
                    });
                    if let Some(v) = short {
                        return Ok(v);
                    }
                    let mut out = String::with_capacity(est as usize);
                    let mut last = 0;
                    for (i, x) in s.bytes().enumerate() {
                        if x == b {
                            out.push_str(s.get(last..i).unwrap_or_default());
                            out.push_str(new);
                            last = i + 1;
                        }
                    }
                    out.push_str(s.get(last..).unwrap_or_default());
                    return Ok(ascii_str(out));
                } else if count < 0 {
                    s.replace(old, new)
                } else {
                    s.replacen(old, new, count as usize)
                };
                Ok(Value::str(r))
            }
            Method::Find | Method::Rfind | Method::Index | Method::Rindex | Method::Count => {
                tuple_args(&a, m.name(), 1, 3)?;
                // CPython converts start and end before it checks `sub`.
                let range = sub_range(ps, &a.pos)?;
                let sub = str_arg(&a.pos[0], "must be str, not ")?;
                let Some((b0, b1)) = range else {
                    return match m {
                        Method::Count => Ok(Value::Int(0)),
                        Method::Index | Method::Rindex => Err(value_err("substring not found")),
                        _ => Ok(Value::Int(-1)),
                    };
                };
                let hay = &s[b0..b1];
                if m == Method::Count {
                    let n = if sub.is_empty() {
                        char_index(hay, hay.len()) + 1
                    } else {
                        hay.matches(sub).count() as i64
                    };
                    return Ok(Value::Int(n));
                }
                let found = if m == Method::Find || m == Method::Index {
                    hay.find(sub)
                } else {
                    hay.rfind(sub)
                };
                match found {
                    Some(i) => Ok(Value::Int(char_index(s, b0 + i))),
                    None => {
                        if m == Method::Index || m == Method::Rindex {
                            Err(value_err("substring not found"))
                        } else {
                            Ok(Value::Int(-1))
                        }
                    }
                }
            }
            Method::Startswith | Method::Endswith => {
                a.no_kw(m.name())?;
                starts_ends_with(ps, m, &a.pos)
            }
            Method::Center | Method::Ljust | Method::Rjust => {
                range_args(&a, m.name(), 1, 2)?;
                let width = as_index(&a.pos[0])?;
                let fill = fill_char(&a, 1)?;
                let len = ps.nchars as i64;
                if width <= len {
                    return Ok(recv.clone());
                }
                let marg = (width - len) as usize;
                mem_check(
                    (marg as u64)
                        .saturating_mul(fill.len_utf8() as u64)
                        .saturating_add(s.len() as u64),
                )?;
                tick(marg as u64 / 256)?;
                let (l, r) = match m {
                    Method::Ljust => (0, marg),
                    Method::Rjust => (marg, 0),
                    _ => {
                        let left = marg / 2 + (marg & (width as usize) & 1);
                        (left, marg - left)
                    }
                };
                let mut out = String::new();
                out.extend(std::iter::repeat_n(fill, l));
                out.push_str(s);
                out.extend(std::iter::repeat_n(fill, r));
                Ok(Value::str(out))
            }
            Method::Zfill => {
                let w = one_arg(&mut a, "str.zfill")?;
                let width = as_index(&w)?;
                let len = ps.nchars as i64;
                if width <= len {
                    return Ok(recv.clone());
                }
                let n = (width - len) as usize;
                mem_check(n as u64 + s.len() as u64)?;
                let (sign, rest) = match s.chars().next() {
                    Some(c @ ('+' | '-')) => (c.to_string(), &s[1..]),
                    _ => (String::new(), s),
                };
                Ok(Value::str(format!("{sign}{}{rest}", "0".repeat(n))))
            }
            Method::Expandtabs => {
                let tabsize = match a
                    .clinic("expandtabs", 0, &["tabsize"], 0, 1)?
                    .pop()
                    .flatten()
                {
                    Some(v) => as_c_int(&v)?,
                    None => 8,
                };
                let mut out = String::new();
                let mut col: i64 = 0;
                for c in s.chars() {
                    match c {
                        '\t' => {
                            if tabsize > 0 {
                                let n = tabsize - (col % tabsize);
                                mem_check((out.len() as u64).saturating_add(n as u64))?;
                                out.extend(std::iter::repeat_n(' ', n as usize));
                                col += n;
                            }
                        }
                        '\n' | '\r' => {
                            out.push(c);
                            col = 0;
                        }
                        _ => {
                            out.push(c);
                            col += 1;
                        }
                    }
                }
                Ok(Value::str(out))
            }
            Method::Partition | Method::Rpartition => {
                let sep = one_arg(&mut a, qual(m.name()))?;
                let sep = str_arg(&sep, "must be str, not ")?.to_string();
                if sep.is_empty() {
                    return Err(value_err("empty separator"));
                }
                // The three parts hold the text once over (sep included).
                strs_preflight(3, s.len() + sep.len())?;
                let found = if m == Method::Partition {
                    s.find(&sep)
                } else {
                    s.rfind(&sep)
                };
                let (x, y, z) = match found {
                    Some(i) => (
                        s[..i].to_string(),
                        sep.clone(),
                        s[i + sep.len()..].to_string(),
                    ),
                    None => {
                        if m == Method::Partition {
                            (s.to_string(), String::new(), String::new())
                        } else {
                            (String::new(), String::new(), s.to_string())
                        }
                    }
                };
                Ok(Value::tuple(vec![
                    Value::str(x),
                    Value::str(y),
                    Value::str(z),
                ]))
            }
            Method::Removeprefix | Method::Removesuffix => {
                let p = one_arg(&mut a, qual(m.name()))?;
                let p = clinic_str_arg(&p, &format!("{}() argument must be str, not ", m.name()))?;
                let r = if m == Method::Removeprefix {
                    s.strip_prefix(p)
                } else {
                    s.strip_suffix(p)
                };
                match r {
                    Some(r) if !p.is_empty() => Ok(Value::str(r)),
                    _ => Ok(recv.clone()),
                }
            }
            _ => Err(Exc::py(
                "AttributeError",
                format!("'str' object has no attribute '{}'", m.name()),
            )),
        }
    }

    fn list_method(&mut self, recv: &Value, m: Method, mut a: CallArgs) -> InterpResult<Value> {
        let Value::List(l) = recv else {
            return Err(Exc::internal("list method on non-list"));
        };
        match m {
            Method::Append => {
                let x = one_arg(&mut a, "list.append")?;
                l.grow(1);
                l.v.borrow_mut().push(x);
                Ok(Value::None)
            }
            Method::Extend => {
                let x = one_arg(&mut a, "list.extend")?;
                if matches!(x, Value::Iter(_)) {
                    // Appended one by one: a generator reading the list sees it grow.
                    return self
                        .items_into(&x, &mut |v| {
                            l.grow(1);
                            l.v.borrow_mut().push(v);
                            Ok(())
                        })
                        .map(|()| Value::None);
                }
                let items = self.collect(&x)?;
                mem_check_n(items.len() as u64, SLOT as u64)?;
                l.grow(items.len());
                l.v.borrow_mut().extend(items);
                Ok(Value::None)
            }
            Method::Clear => {
                no_args(&a, "list.clear")?;
                let old = std::mem::take(&mut *l.v.borrow_mut());
                l.shrink(old.len());
                drop(old);
                Ok(Value::None)
            }
            Method::Copy => {
                no_args(&a, "list.copy")?;
                let n = l.v.borrow().len() as u64;
                mem_check_n(n, SLOT as u64)?;
                tick(n / 16)?;
                let v = l.v.borrow().clone();
                Ok(Value::list(v))
            }
            Method::Count => {
                let x = one_arg(&mut a, "list.count")?;
                let items = l.v.borrow().clone();
                let mut n = 0;
                for item in &items {
                    tick(1)?;
                    if item.is(&x) || eq(item, &x)? {
                        n += 1;
                    }
                }
                Ok(Value::Int(n))
            }
            Method::Index => {
                range_args(&a, "index", 1, 3)?;
                let x = &a.pos[0];
                let items = l.v.borrow().clone();
                let none = Value::None;
                index_bounds_ok(&a.pos)?;
                let (s, e, _) = slice_adjust(
                    a.pos.get(1).unwrap_or(&none),
                    a.pos.get(2).unwrap_or(&none),
                    &none,
                    items.len(),
                )?;
                let mut i = s.max(0);
                while i < e {
                    tick(1)?;
                    let item = &items[i as usize];
                    if item.is(x) || eq(item, x)? {
                        return Ok(Value::Int(i));
                    }
                    i += 1;
                }
                let r = self.repr(x)?;
                Err(value_err(format!("{r} is not in list")))
            }
            Method::Insert => {
                range_args(&a, "insert", 2, 2)?;
                let i = as_index(&a.pos[0])?;
                let x = a.pos.pop().unwrap_or(Value::None);
                let mut v = l.v.borrow_mut();
                let n = v.len() as i64;
                let i = if i < 0 { (i + n).max(0) } else { i.min(n) };
                l.grow(1);
                tick(1 + v.len() as u64 / 64)?;
                v.insert(i as usize, x);
                Ok(Value::None)
            }
            Method::Pop => {
                range_args(&a, "pop", 0, 1)?;
                let i = match a.pos.first() {
                    Some(x) => as_index(x)?,
                    None => -1,
                };
                let mut v = l.v.borrow_mut();
                if v.is_empty() {
                    return Err(Exc::py("IndexError", "pop from empty list"));
                }
                let n = v.len() as i64;
                let i = if i < 0 { i + n } else { i };
                if i < 0 || i >= n {
                    return Err(Exc::py("IndexError", "pop index out of range"));
                }
                tick(1 + (n - i) as u64 / 64)?;
                l.shrink(1);
                Ok(v.remove(i as usize))
            }
            Method::Remove => {
                let x = one_arg(&mut a, "list.remove")?;
                let items = l.v.borrow().clone();
                for (i, item) in items.iter().enumerate() {
                    tick(1)?;
                    if item.is(&x) || eq(item, &x)? {
                        let mut v = l.v.borrow_mut();
                        if i < v.len() {
                            l.shrink(1);
                            v.remove(i);
                        }
                        return Ok(Value::None);
                    }
                }
                Err(value_err("list.remove(x): x not in list"))
            }
            Method::Reverse => {
                no_args(&a, "list.reverse")?;
                l.v.borrow_mut().reverse();
                Ok(Value::None)
            }
            Method::Sort => {
                let mut it = a.clinic("sort", 0, &["key", "reverse"], 0, 0)?.into_iter();
                let key = it.next().flatten();
                let rev = it.next().flatten();
                let reverse = reverse_flag(rev.as_ref())?;
                let items = std::mem::take(&mut *l.v.borrow_mut());
                let r = self.sort_values(items, key.as_ref(), reverse);
                match r {
                    Ok(sorted) => {
                        let mut v = l.v.borrow_mut();
                        let modified = !v.is_empty();
                        *v = sorted;
                        if modified {
                            return Err(value_err("list modified during sort"));
                        }
                        Ok(Value::None)
                    }
                    Err((e, orig)) => {
                        *l.v.borrow_mut() = orig;
                        Err(e)
                    }
                }
            }
            _ => Err(Exc::py(
                "AttributeError",
                format!("'list' object has no attribute '{}'", m.name()),
            )),
        }
    }

    /// Stable sort by `key` (a key function or None), CPython-style: with
    /// `reverse`, reverse, sort stably, reverse again. On error the items
    /// come back (in some order) with the error.
    ///
    /// # Errors
    /// The comparison or key error, with the items.
    pub fn sort_values(
        &mut self,
        items: Vec<Value>,
        key: Option<&Value>,
        reverse: bool,
    ) -> Result<Vec<Value>, (Box<Exc>, Vec<Value>)> {
        let key = key.filter(|k| !matches!(k, Value::None));
        // What sorting holds besides the items (charged by the caller): the
        // keys, the index permutation and its merge buffer, the slots the
        // items move through and the sorted vector.
        if let Err(e) = mem_check_n(items.len() as u64, SORT_BYTES_PER_ITEM) {
            return Err((e, items));
        }
        // CPython computes the keys in list order, then reverses items and
        // keys (for stability), sorts forwards and reverses back.
        let keys: Vec<Value> = match key {
            Some(k) => {
                let mut ks = Vec::with_capacity(items.len());
                for x in &items {
                    match self.call_func(k, x.clone()) {
                        Ok(v) => ks.push(v),
                        Err(e) => return Err((e, items)),
                    }
                }
                ks
            }
            None => items.clone(),
        };
        sort_with_keys(items, keys, reverse)
    }
}

/// Sort `items` by their `keys` (one per item, same order), stably, as
/// CPython: reversed first when `reverse` (for stability), sorted
/// forwards, reversed back.
///
/// # Errors
/// The comparison error, with the items in their original order.
pub fn sort_with_keys(
    mut items: Vec<Value>,
    mut keys: Vec<Value>,
    reverse: bool,
) -> Result<Vec<Value>, (Box<Exc>, Vec<Value>)> {
    if reverse {
        items.reverse();
        keys.reverse();
    }
    // On a failed comparison the items go back in their original order.
    let restore = |mut items: Vec<Value>| {
        if reverse {
            items.reverse();
        }
        items
    };
    let mut idx: Vec<usize> = (0..items.len()).collect();
    let sorted_fast = match fast_sort(&mut idx, &keys) {
        Ok(done) => done,
        Err(e) => return Err((e, restore(items))),
    };
    if !sorted_fast {
        if let Err(e) = merge_sort(&mut idx, &keys) {
            return Err((e, restore(items)));
        }
    }
    let mut slots: Vec<Option<Value>> = items.into_iter().map(Some).collect();
    let mut out: Vec<Value> = idx
        .iter()
        .filter_map(|i| slots.get_mut(*i).and_then(Option::take))
        .collect();
    if reverse {
        out.reverse();
    }
    Ok(out)
}

impl<'a> Interp<'a> {
    fn dict_method(&mut self, recv: &Value, m: Method, a: CallArgs) -> InterpResult<Value> {
        let Value::Dict(d) = recv else {
            return Err(Exc::internal("dict method on non-dict"));
        };
        match m {
            Method::Get => {
                range_args(&a, "get", 1, 2)?;
                let dd = d.d.borrow();
                Ok(match dd.get(&a.pos[0])? {
                    Some(v) => v.clone(),
                    None => a.pos.get(1).cloned().unwrap_or(Value::None),
                })
            }
            Method::Keys | Method::Values | Method::Items => {
                no_args(&a, Qual("dict", m))?;
                let k = match m {
                    Method::Keys => ViewKind::Keys,
                    Method::Values => ViewKind::Values,
                    _ => ViewKind::Items,
                };
                Ok(Value::view(d.clone(), k))
            }
            Method::Pop => {
                range_args(&a, "pop", 1, 2)?;
                // An empty dict answers without hashing the key (CPython).
                let r = if d.d.borrow().is_empty() {
                    None
                } else {
                    d.d.borrow_mut().remove(&a.pos[0])?
                };
                match r {
                    Some((_, v)) => Ok(v),
                    None => match a.pos.get(1) {
                        Some(dflt) => Ok(dflt.clone()),
                        None => Err(Exc::py("KeyError", self.repr(&a.pos[0])?)),
                    },
                }
            }
            Method::Popitem => {
                no_args(&a, "dict.popitem")?;
                let r = d.d.borrow_mut().pop_last();
                match r {
                    Some((k, v)) => Ok(Value::tuple(vec![k, v])),
                    None => Err(Exc::py("KeyError", "'popitem(): dictionary is empty'")),
                }
            }
            Method::Setdefault => {
                range_args(&a, "setdefault", 1, 2)?;
                let k = a.pos[0].clone();
                let h = hash_value(&k)?;
                let mut dd = d.d.borrow_mut();
                if let Some(v) = dd.get_h(h, &k) {
                    return Ok(v.clone());
                }
                let v = a.pos.get(1).cloned().unwrap_or(Value::None);
                dd.insert_h(h, k, v.clone());
                Ok(v)
            }
            Method::Update => {
                if a.pos.len() > 1 {
                    return Err(type_err(format!(
                        "update expected at most 1 argument, got {}",
                        a.pos.len()
                    )));
                }
                match a.pos.first() {
                    // a.update(a) changes nothing.
                    Some(Value::Dict(o)) if std::rc::Rc::ptr_eq(o, d) => {}
                    Some(Value::Dict(o)) => {
                        let o = o.d.borrow();
                        tick(o.len() as u64 / 8)?;
                        mem_check_n(o.len() as u64, ENTRY as u64)?;
                        d.d.borrow_mut().merge_from(&o);
                    }
                    Some(src) => {
                        self.pairs_into(src, &mut |k, v| d.d.borrow_mut().insert(k, v).map(drop))?
                    }
                    None => {}
                }
                let mut dd = d.d.borrow_mut();
                for (k, v) in a.kw {
                    dd.insert(Value::str(&*k), v)?;
                }
                Ok(Value::None)
            }
            Method::Clear => {
                no_args(&a, "dict.clear")?;
                d.d.borrow_mut().clear();
                Ok(Value::None)
            }
            Method::Copy => {
                no_args(&a, "dict.copy")?;
                let c = copy_dict(&d.d.borrow())?;
                Ok(Value::dict(c))
            }
            _ => Err(Exc::py(
                "AttributeError",
                format!("'dict' object has no attribute '{}'", m.name()),
            )),
        }
    }

    /// Key/value pairs from a mapping or an iterable of pairs (dict(),
    /// update()), each handed to `sink` before the next is pulled, as
    /// CPython's PyDict_MergeFromSeq2 inserts them (a generator that reads
    /// the dict being updated sees the new keys; a bad element fails before
    /// later elements are produced).
    ///
    /// # Errors
    /// CPython's errors for malformed update sequences; whatever `sink` raises.
    pub fn pairs_into(
        &mut self,
        src: &Value,
        sink: &mut dyn FnMut(Value, Value) -> InterpResult<()>,
    ) -> InterpResult<()> {
        if let Value::Dict(s) = src {
            let pairs: Vec<(Value, Value)> = {
                let s = s.d.borrow();
                tick(s.len() as u64 / 8)?;
                // The pairs, then the dict they go into.
                mem_check_n(s.len() as u64, (2 * SLOT + ENTRY) as u64)?;
                s.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
            };
            for (k, v) in pairs {
                sink(k, v)?;
            }
            return Ok(());
        }
        let mut it = self.iterate(src)?;
        let mut i = 0usize;
        while let Some(item) = self.next(&mut it)? {
            tick(1)?;
            if i % 1024 == 1023 {
                mem_check_n(1, (2 * SLOT + ENTRY) as u64)?;
            }
            if !self.is_iterable(&item) {
                return Err(type_err(format!(
                    "cannot convert dictionary update sequence element #{i} to a sequence"
                )));
            }
            let kv = self.collect(&item)?;
            if kv.len() != 2 {
                return Err(value_err(format!(
                    "dictionary update sequence element #{i} has length {}; 2 is required",
                    kv.len()
                )));
            }
            let mut kv = kv.into_iter();
            if let (Some(k), Some(v)) = (kv.next(), kv.next()) {
                sink(k, v)?;
            }
            i += 1;
        }
        Ok(())
    }

    /// Feed the items of `v` to `sink`. A generator (or another iterator,
    /// which may wrap one) is pulled one item at a time, each handed on
    /// before the next is produced, as CPython's set(), set.update(),
    /// list.extend() ... iterate: an unhashable item fails before later
    /// items run, and a generator reading the container being filled sees
    /// it change. Other iterables run no code while iterated: collected.
    ///
    /// # Errors
    /// Whatever iterating or `sink` raises; limits.
    pub fn items_into(
        &mut self,
        v: &Value,
        sink: &mut dyn FnMut(Value) -> InterpResult<()>,
    ) -> InterpResult<()> {
        if !matches!(v, Value::Iter(_)) {
            for x in self.collect(v)? {
                sink(x)?;
            }
            return Ok(());
        }
        let mut it = self.iterate(v)?;
        let mut n = 0usize;
        while let Some(x) = self.next(&mut it)? {
            tick(1)?;
            n += 1;
            if n.is_multiple_of(1024) {
                mem_check_n(1, ENTRY as u64)?;
            }
            sink(x)?;
        }
        Ok(())
    }

    /// The elements of `v` as a table (a set's in its iteration order).
    fn set_of(&mut self, v: &Value) -> InterpResult<Dict> {
        if let Value::Set(s) = v {
            s.in_order()?;
            let s = s.d.borrow();
            tick(s.len() as u64 / 8)?;
            mem_check_n(s.len() as u64, ENTRY as u64)?;
            return Ok(s.copy());
        }
        let mut d = Dict::new();
        if matches!(v, Value::Iter(_)) {
            self.items_into(v, &mut |x| d.insert(x, Value::None).map(drop))?;
            return Ok(d);
        }
        let items = self.collect(v)?;
        tick(items.len() as u64 / 8)?;
        mem_check_n(items.len() as u64, ENTRY as u64)?;
        for x in items {
            d.insert(x, Value::None)?;
        }
        Ok(d)
    }

    fn set_method(&mut self, recv: &Value, m: Method, mut a: CallArgs) -> InterpResult<Value> {
        let Value::Set(s) = recv else {
            return Err(Exc::internal("set method on non-set"));
        };
        // Results and pops follow the receiver's iteration order (put in
        // order here, not for `add` and the like: a loop of adds would
        // reorder the set at every step).
        if matches!(
            m,
            Method::Intersection
                | Method::IntersectionUpdate
                | Method::Difference
                | Method::SymmetricDifference
        ) {
            s.in_order()?;
        }
        let qual = Qual("set", m);
        use super::setorder::Model;
        match m {
            Method::Add => {
                let x = one_arg(&mut a, qual)?;
                if s.d.borrow_mut().insert(x.clone(), Value::None)? {
                    s.added(&x);
                }
                Ok(Value::None)
            }
            Method::Discard | Method::Remove => {
                let x = one_arg(&mut a, qual)?;
                // A set argument is looked up as a frozenset (CPython), which
                // no set holds.
                let r = if matches!(x, Value::Set(_)) {
                    None
                } else {
                    s.materialize();
                    s.d.borrow_mut().remove(&x)?
                };
                if r.is_some() {
                    s.removed(&x);
                }
                if r.is_none() && m == Method::Remove {
                    return Err(Exc::py("KeyError", self.repr(&x)?));
                }
                Ok(Value::None)
            }
            Method::Pop => {
                no_args(&a, qual)?;
                // CPython's pop takes the key at its table's finger; the
                // others keep their places.
                let r = match s.pop_key() {
                    Some(k) => s.d.borrow_mut().remove(&k)?,
                    None => s.d.borrow_mut().pop_first(),
                };
                match r {
                    Some((k, _)) => Ok(k),
                    None => Err(Exc::py("KeyError", "'pop from an empty set'")),
                }
            }
            Method::Clear => {
                no_args(&a, qual)?;
                s.d.borrow_mut().clear();
                s.cleared();
                Ok(Value::None)
            }
            Method::Copy => {
                no_args(&a, qual)?;
                let c = copy_dict(&s.d.borrow())?;
                Ok(Value::set_with(c, s.model_copy()))
            }
            Method::Union | Method::Update => {
                a.no_kw(m.name())?;
                // Union: a copy of the receiver (`set_copy`), then each
                // argument as `update` takes it: a set is merged
                // (`set_merge`), anything else added item by item.
                let mut d = if m == Method::Union {
                    copy_dict(&s.d.borrow())?
                } else {
                    Dict::new()
                };
                let mut model = if m == Method::Union {
                    s.model_copy()
                } else {
                    None
                };
                for o in &a.pos {
                    if let Value::Set(os) = o {
                        // The model fixes the order: no need to sort `os`.
                        let keys: Vec<Value> = os.d.borrow().keys().cloned().collect();
                        tick(keys.len() as u64)?;
                        if m == Method::Union {
                            Model::merge_into(&mut model, os.model_raw().as_ref(), |k| {
                                d.contains(k).unwrap_or(true)
                            });
                            for k in keys {
                                d.insert(k, Value::None)?;
                            }
                        } else {
                            s.merging(os);
                            for k in keys {
                                s.d.borrow_mut().insert(k, Value::None)?;
                            }
                        }
                        continue;
                    }
                    self.items_into(o, &mut |x| {
                        tick(1)?;
                        if m == Method::Union {
                            if d.insert(x.clone(), Value::None)? {
                                Model::add_to(&mut model, &x);
                            }
                        } else if s.d.borrow_mut().insert(x.clone(), Value::None)? {
                            s.added(&x);
                        }
                        Ok(())
                    })?;
                }
                Ok(if m == Method::Union {
                    Value::set_with(d, model)
                } else {
                    Value::None
                })
            }
            Method::Intersection | Method::IntersectionUpdate => {
                a.no_kw(m.name())?;
                let mut cur = copy_dict(&s.d.borrow())?;
                for o in &a.pos {
                    let other = self.set_of(o)?;
                    let mut next = Dict::new();
                    // CPython walks the argument (a set larger than the
                    // receiver: the receiver) and adds what the other
                    // holds, so the result's order follows the walked one.
                    let walk_other = !(matches!(o, Value::Set(_)) && other.len() > cur.len());
                    let (walk, probe) = if walk_other {
                        (&other, &cur)
                    } else {
                        (&cur, &other)
                    };
                    for k in walk.keys() {
                        tick(1)?;
                        if probe.contains(k)? {
                            next.insert(k.clone(), Value::None)?;
                        }
                    }
                    cur = next;
                }
                if m == Method::IntersectionUpdate {
                    let model = super::value::model_adding(&cur);
                    *s.d.borrow_mut() = cur;
                    s.set_model(model);
                    Ok(Value::None)
                } else {
                    Ok(Value::set(cur))
                }
            }
            Method::Difference | Method::DifferenceUpdate => {
                a.no_kw(m.name())?;
                let update = m == Method::DifferenceUpdate;
                let mut cur = copy_dict(&s.d.borrow())?;
                let mut model = if update { s.model_raw() } else { None };
                for (i, o) in a.pos.iter().enumerate() {
                    if let (true, Value::Set(os)) = (update, o) {
                        if std::rc::Rc::ptr_eq(os, s) {
                            // set_difference_update_internal: the set itself
                            // as the argument clears it (a fresh table).
                            cur = Dict::new();
                            s.d.borrow_mut().clear();
                            s.cleared();
                            model = s.model_raw();
                            continue;
                        }
                    }
                    let other = self.set_of(o)?;
                    // The first argument of `difference`: CPython adds the
                    // receiver's keys the argument lacks to a new set when
                    // the argument is a set or dict not much smaller than
                    // the receiver, else copies the receiver and removes.
                    let small = match o {
                        Value::Set(_) | Value::Dict(_) => (cur.len() >> 2) > other.len(),
                        _ => true,
                    };
                    if !update && i == 0 && !small {
                        let mut next = Dict::new();
                        for k in cur.keys() {
                            tick(1)?;
                            if !other.contains(k)? {
                                next.insert(k.clone(), Value::None)?;
                            }
                        }
                        model = super::value::model_adding(&next);
                        cur = next;
                        continue;
                    }
                    if !update && i == 0 {
                        model = s.model_copy();
                    }
                    for k in other.keys() {
                        tick(1)?;
                        super::setorder::remove_key(&mut cur, &mut model, k)?;
                    }
                    if let Some(mm) = model.as_mut() {
                        mm.after_removals();
                    }
                }
                if a.pos.is_empty() && !update {
                    model = s.model_copy();
                }
                if update {
                    *s.d.borrow_mut() = cur;
                    s.set_model(model);
                    Ok(Value::None)
                } else {
                    Ok(Value::set_with(cur, model))
                }
            }
            Method::SymmetricDifference => {
                let o = one_arg(&mut a, qual)?;
                // CPython: a new set from the argument, then each of the
                // receiver's keys (in its order) removed from it when
                // there, else added.
                let mut d = self.set_of(&o)?;
                let mut model = match &o {
                    Value::Set(os) => os.model_copy(),
                    _ => super::value::model_adding(&d),
                };
                let mine: Vec<Value> = s.d.borrow().keys().cloned().collect();
                for k in mine {
                    tick(1)?;
                    if !super::setorder::remove_key(&mut d, &mut model, &k)? {
                        d.insert(k.clone(), Value::None)?;
                        Model::add_to(&mut model, &k);
                    }
                }
                Ok(Value::set_with(d, model))
            }
            Method::Isdisjoint | Method::Issubset | Method::Issuperset => {
                let o = one_arg(&mut a, qual)?;
                if m != Method::Issubset && !matches!(o, Value::Set(_)) {
                    // CPython walks a non-set argument item by item and
                    // stops at the first item that decides the answer.
                    let stop_if_inside = m == Method::Isdisjoint;
                    let mut it = self.iterate(&o)?;
                    while let Some(x) = self.next(&mut it)? {
                        tick(1)?;
                        let inside = s.d.borrow().contains(&x)?;
                        if inside == stop_if_inside {
                            return Ok(Value::Bool(false));
                        }
                    }
                    return Ok(Value::Bool(true));
                }
                let other = self.set_of(&o)?;
                let mine = s.d.borrow();
                let r = match m {
                    Method::Isdisjoint => {
                        let mut r = true;
                        for k in mine.keys() {
                            tick(1)?;
                            if other.contains(k)? {
                                r = false;
                                break;
                            }
                        }
                        r
                    }
                    Method::Issubset => super::ops::subset(&mine, &other)?,
                    _ => super::ops::subset(&other, &mine)?,
                };
                Ok(Value::Bool(r))
            }
            _ => Err(Exc::py(
                "AttributeError",
                format!("'set' object has no attribute '{}'", m.name()),
            )),
        }
    }
}

impl Interp<'_> {
    /// `view.isdisjoint(other)` for a keys or items view of `len` entries,
    /// as CPython 3.11's `dictviews_isdisjoint`: when `other` is a set or
    /// a keys/items view larger than the view, the view is walked and looked
    /// up in `other`, else `other` is walked and looked up in the view; the
    /// first item found inside answers False.
    fn view_isdisjoint(&mut self, view: &Value, len: usize, other: Value) -> InterpResult<Value> {
        let other_len = match &other {
            Value::Set(s) => Some(s.d.borrow().len()),
            Value::Keys(d) | Value::Items(d) => Some(d.d.borrow().len()),
            _ => None,
        };
        let (walk, look_in) = match other_len {
            Some(n) if n > len => (view.clone(), other),
            _ => (other, view.clone()),
        };
        let mut it = self.iterate(&walk)?;
        while let Some(x) = self.next(&mut it)? {
            tick(1)?;
            if self.contains(&look_in, &x)? {
                return Ok(Value::Bool(false));
            }
        }
        Ok(Value::Bool(true))
    }
}

/// The `reverse=` argument of sorting: an int-like value, as CPython requires.
///
/// # Errors
/// `TypeError: 'str' object cannot be interpreted as an integer`.
pub fn reverse_flag(v: Option<&Value>) -> InterpResult<bool> {
    match v {
        None => Ok(false),
        Some(v) => Ok(as_c_int(v)? != 0),
    }
}

/// CPython's `_PyLong_AsInt` (the `int` and `bool(accept={int})` argument
/// converters): an int that fits a C int.
///
/// # Errors
/// TypeError for non-ints, OverflowError beyond the C int range.
pub fn as_c_int(v: &Value) -> InterpResult<i64> {
    let overflow = || Exc::py("OverflowError", "Python int too large to convert to C int");
    match v {
        Value::Bool(b) => Ok(*b as i64),
        Value::Int(i) if i32::try_from(*i).is_ok() => Ok(*i),
        Value::Int(_) | Value::Big(_) => Err(overflow()),
        o => Err(type_err(format!(
            "'{}' object cannot be interpreted as an integer",
            o.type_name()
        ))),
    }
}

/// Stable sorts for homogeneous keys with a total order (all ints, all
/// strs, or equal-length tuples of ints), using native comparisons. Returns
/// whether it sorted; `false` means "use the general sort".
fn fast_sort(idx: &mut [usize], keys: &[Value]) -> InterpResult<bool> {
    let n = keys.len() as u64;
    if n < 2 {
        return Ok(true);
    }
    let cost = n * (64 - n.leading_zeros() as u64);
    if keys.iter().all(|k| matches!(k, Value::Int(_))) {
        tick(cost / 4)?;
        let ks: Vec<i64> = keys
            .iter()
            .map(|k| if let Value::Int(i) = k { *i } else { 0 })
            .collect();
        idx.sort_by_key(|i| ks[*i]);
        return Ok(true);
    }
    if keys.iter().all(|k| matches!(k, Value::Str(_))) {
        tick(cost / 2)?;
        let ks: Vec<&str> = keys
            .iter()
            .map(|k| {
                if let Value::Str(s) = k {
                    s.as_str()
                } else {
                    ""
                }
            })
            .collect();
        // Surrogate mode asked once per sort, not per comparison.
        if super::surrogate::on() {
            idx.sort_by(|a, b| super::surrogate::cmp_str(ks[*a].as_bytes(), ks[*b].as_bytes()));
        } else {
            idx.sort_by(|a, b| ks[*a].cmp(ks[*b]));
        }
        return Ok(true);
    }
    let width = match &keys[0] {
        Value::Tuple(t) => t.v.len(),
        _ => return Ok(false),
    };
    if width == 0 || width > 8 {
        return Ok(false);
    }
    mem_check_n(
        keys.len() as u64,
        SORT_BYTES_PER_ITEM.saturating_add(8 * width as u64),
    )?;
    let mut flat: Vec<i64> = Vec::with_capacity(keys.len() * width);
    for k in keys {
        match k {
            Value::Tuple(t) if t.v.len() == width => {
                for x in &t.v {
                    match x {
                        Value::Int(i) => flat.push(*i),
                        _ => return Ok(false),
                    }
                }
            }
            _ => return Ok(false),
        }
    }
    tick(cost / 2)?;
    idx.sort_by(|a, b| flat[a * width..(a + 1) * width].cmp(&flat[b * width..(b + 1) * width]));
    Ok(true)
}

/// A copy of a dict's or set's table, preflighted against the memory budget.
///
/// # Errors
/// `memory` or `fuel` limit error.
fn copy_dict(d: &Dict) -> InterpResult<Dict> {
    tick(d.len() as u64 / 8)?;
    mem_check_n(d.len() as u64, ENTRY as u64)?;
    Ok(d.copy())
}

/// Bytes a sort holds per item besides the items themselves (keys, slots
/// and result: three value slots; the permutation and its merge buffer or
/// the fast path's flat keys: three words).
pub const SORT_BYTES_PER_ITEM: u64 = 3 * SLOT as u64 + 24;

/// Stable sort of indices by `keys` using only `<` (fallible): CPython
/// 3.11's `list.sort` (timsort with the powersort merge order), step for
/// step. The comparisons happen in CPython's order, so a failing one (mixed
/// types) raises the same error, and keys without a total order (NaN) end
/// in CPython's order.
fn merge_sort(idx: &mut [usize], keys: &[Value]) -> InterpResult<()> {
    TimSort {
        keys,
        min_gallop: MIN_GALLOP,
    }
    .sort(idx)
}

/// `MIN_GALLOP` of CPython's listobject.c.
const MIN_GALLOP: usize = 7;

/// A pending run: start, length and powersort power.
#[derive(Clone, Copy)]
struct Run {
    base: usize,
    len: usize,
    power: u32,
}

/// CPython's `MergeState`, over a permutation of indices into `keys`.
struct TimSort<'k> {
    keys: &'k [Value],
    min_gallop: usize,
}

/// CPython's `merge_compute_minrun`.
fn compute_minrun(mut n: usize) -> usize {
    let mut r = 0;
    while n >= 64 {
        r |= n & 1;
        n >>= 1;
    }
    n + r
}

/// CPython's `powerloop`: the power of the run `[s1, s1 + n1)` followed by
/// a run of `n2`, in a list of `n`.
fn powerloop(s1: usize, n1: usize, n2: usize, n: usize) -> u32 {
    let mut result = 0;
    let mut a = 2 * s1 + n1;
    let mut b = a + n1 + n2;
    loop {
        result += 1;
        if a >= n {
            a -= n;
            b -= n;
        } else if b >= n {
            break;
        }
        a <<= 1;
        b <<= 1;
    }
    result
}

impl TimSort<'_> {
    /// `keys[x] < keys[y]`.
    fn lt(&self, x: usize, y: usize) -> InterpResult<bool> {
        tick(1)?;
        match (self.keys.get(x), self.keys.get(y)) {
            (Some(a), Some(b)) => lt(a, b),
            _ => Err(Exc::internal("sort index out of range")),
        }
    }

    fn sort(&mut self, v: &mut [usize]) -> InterpResult<()> {
        let n = v.len();
        if n < 2 {
            return Ok(());
        }
        let minrun = compute_minrun(n);
        let mut runs: Vec<Run> = Vec::new();
        let mut lo = 0;
        while lo < n {
            let (mut len, descending) = self.count_run(&v[lo..])?;
            if descending {
                v[lo..lo + len].reverse();
            }
            if len < minrun {
                let force = (n - lo).min(minrun);
                self.binarysort(&mut v[lo..lo + force], len)?;
                len = force;
            }
            // found_new_run
            if let Some(last) = runs.last().copied() {
                let power = powerloop(last.base, last.len, len, n);
                while runs.len() > 1 && runs[runs.len() - 2].power > power {
                    let i = runs.len() - 2;
                    self.merge_at(v, &mut runs, i)?;
                }
                if let Some(last) = runs.last_mut() {
                    last.power = power;
                }
            }
            runs.push(Run {
                base: lo,
                len,
                power: 0,
            });
            lo += len;
        }
        // merge_force_collapse
        while runs.len() > 1 {
            let mut i = runs.len() - 2;
            if i > 0 && runs[i - 1].len < runs[i + 1].len {
                i -= 1;
            }
            self.merge_at(v, &mut runs, i)?;
        }
        Ok(())
    }

    /// Length of the run at the start of `v` (non-empty), and whether it is
    /// strictly descending.
    fn count_run(&self, v: &[usize]) -> InterpResult<(usize, bool)> {
        if v.len() < 2 {
            return Ok((v.len(), false));
        }
        let mut n = 2;
        if self.lt(v[1], v[0])? {
            while n < v.len() && self.lt(v[n], v[n - 1])? {
                n += 1;
            }
            Ok((n, true))
        } else {
            while n < v.len() && !self.lt(v[n], v[n - 1])? {
                n += 1;
            }
            Ok((n, false))
        }
    }

    /// Binary insertion sort of `v`, whose first `start` items are sorted.
    fn binarysort(&self, v: &mut [usize], start: usize) -> InterpResult<()> {
        for i in start.max(1)..v.len() {
            let pivot = v[i];
            let (mut l, mut r) = (0, i);
            while l < r {
                let p = l + ((r - l) >> 1);
                if self.lt(pivot, v[p])? {
                    r = p;
                } else {
                    l = p + 1;
                }
            }
            v.copy_within(l..i, l + 1);
            v[l] = pivot;
        }
        Ok(())
    }

    /// Where `key` belongs in sorted `a`: before the equal items.
    fn gallop_left(&self, key: usize, a: &[usize], hint: usize) -> InterpResult<usize> {
        let n = a.len() as isize;
        let h = hint as isize;
        let (mut lastofs, mut ofs): (isize, isize) = (0, 1);
        if self.lt(a[hint], key)? {
            let maxofs = n - h;
            while ofs < maxofs {
                if self.lt(a[(h + ofs) as usize], key)? {
                    lastofs = ofs;
                    ofs = (ofs << 1) + 1;
                } else {
                    break;
                }
            }
            ofs = ofs.min(maxofs);
            lastofs += h;
            ofs += h;
        } else {
            let maxofs = h + 1;
            while ofs < maxofs {
                if self.lt(a[(h - ofs) as usize], key)? {
                    break;
                }
                lastofs = ofs;
                ofs = (ofs << 1) + 1;
            }
            ofs = ofs.min(maxofs);
            let k = lastofs;
            lastofs = h - ofs;
            ofs = h - k;
        }
        lastofs += 1;
        while lastofs < ofs {
            let m = lastofs + ((ofs - lastofs) >> 1);
            if self.lt(a[m as usize], key)? {
                lastofs = m + 1;
            } else {
                ofs = m;
            }
        }
        Ok(ofs as usize)
    }

    /// Where `key` belongs in sorted `a`: after the equal items.
    fn gallop_right(&self, key: usize, a: &[usize], hint: usize) -> InterpResult<usize> {
        let n = a.len() as isize;
        let h = hint as isize;
        let (mut lastofs, mut ofs): (isize, isize) = (0, 1);
        if self.lt(key, a[hint])? {
            let maxofs = h + 1;
            while ofs < maxofs {
                if self.lt(key, a[(h - ofs) as usize])? {
                    lastofs = ofs;
                    ofs = (ofs << 1) + 1;
                } else {
                    break;
                }
            }
            ofs = ofs.min(maxofs);
            let k = lastofs;
            lastofs = h - ofs;
            ofs = h - k;
        } else {
            let maxofs = n - h;
            while ofs < maxofs {
                if self.lt(key, a[(h + ofs) as usize])? {
                    break;
                }
                lastofs = ofs;
                ofs = (ofs << 1) + 1;
            }
            ofs = ofs.min(maxofs);
            lastofs += h;
            ofs += h;
        }
        lastofs += 1;
        while lastofs < ofs {
            let m = lastofs + ((ofs - lastofs) >> 1);
            if self.lt(key, a[m as usize])? {
                ofs = m;
            } else {
                lastofs = m + 1;
            }
        }
        Ok(ofs as usize)
    }

    /// Merge the pending runs `i` and `i + 1`.
    fn merge_at(&mut self, v: &mut [usize], runs: &mut Vec<Run>, i: usize) -> InterpResult<()> {
        let (base_a, na) = (runs[i].base, runs[i].len);
        let (base_b, nb) = (runs[i + 1].base, runs[i + 1].len);
        runs[i].len = na + nb;
        runs.remove(i + 1);
        // Items of a before b's first item are already in place.
        let k = self.gallop_right(v[base_b], &v[base_a..base_a + na], 0)?;
        let (base_a, na) = (base_a + k, na - k);
        if na == 0 {
            return Ok(());
        }
        // Items of b after a's last item are already in place.
        let nb = self.gallop_left(v[base_a + na - 1], &v[base_b..base_b + nb], nb - 1)?;
        if nb == 0 {
            return Ok(());
        }
        let s = &mut v[base_a..base_b + nb];
        if na <= nb {
            self.merge_lo(s, na)
        } else {
            self.merge_hi(s, na)
        }
    }

    /// Merge `v[..na]` and `v[na..]` (both sorted, `na <= len - na`).
    fn merge_lo(&mut self, v: &mut [usize], na: usize) -> InterpResult<()> {
        let tmp: Vec<usize> = v[..na].to_vec();
        let (mut na, mut nb) = (na, v.len() - na);
        let (mut pa, mut pb, mut dest) = (0, na, 0);
        v[dest] = v[pb];
        dest += 1;
        pb += 1;
        nb -= 1;
        let copy_b = 'merge: {
            if nb == 0 {
                break 'merge false;
            }
            if na == 1 {
                break 'merge true;
            }
            let mut min_gallop = self.min_gallop;
            loop {
                let (mut acount, mut bcount) = (0, 0);
                loop {
                    if self.lt(v[pb], tmp[pa])? {
                        v[dest] = v[pb];
                        dest += 1;
                        pb += 1;
                        bcount += 1;
                        acount = 0;
                        nb -= 1;
                        if nb == 0 {
                            break 'merge false;
                        }
                        if bcount >= min_gallop {
                            break;
                        }
                    } else {
                        v[dest] = tmp[pa];
                        dest += 1;
                        pa += 1;
                        acount += 1;
                        bcount = 0;
                        na -= 1;
                        if na == 1 {
                            break 'merge true;
                        }
                        if acount >= min_gallop {
                            break;
                        }
                    }
                }
                min_gallop += 1;
                loop {
                    min_gallop -= usize::from(min_gallop > 1);
                    self.min_gallop = min_gallop;
                    let k = self.gallop_right(v[pb], &tmp[pa..pa + na], 0)?;
                    acount = k;
                    if k > 0 {
                        v[dest..dest + k].copy_from_slice(&tmp[pa..pa + k]);
                        dest += k;
                        pa += k;
                        na -= k;
                        if na == 1 {
                            break 'merge true;
                        }
                        if na == 0 {
                            break 'merge false;
                        }
                    }
                    v[dest] = v[pb];
                    dest += 1;
                    pb += 1;
                    nb -= 1;
                    if nb == 0 {
                        break 'merge false;
                    }
                    let k = self.gallop_left(tmp[pa], &v[pb..pb + nb], 0)?;
                    bcount = k;
                    if k > 0 {
                        v.copy_within(pb..pb + k, dest);
                        dest += k;
                        pb += k;
                        nb -= k;
                        if nb == 0 {
                            break 'merge false;
                        }
                    }
                    v[dest] = tmp[pa];
                    dest += 1;
                    pa += 1;
                    na -= 1;
                    if na == 1 {
                        break 'merge true;
                    }
                    if acount < MIN_GALLOP && bcount < MIN_GALLOP {
                        break;
                    }
                }
                min_gallop += 1;
                self.min_gallop = min_gallop;
            }
        };
        if copy_b {
            // The last item of a belongs at the end.
            v.copy_within(pb..pb + nb, dest);
            v[dest + nb] = tmp[pa];
        } else if na > 0 {
            v[dest..dest + na].copy_from_slice(&tmp[pa..pa + na]);
        }
        Ok(())
    }

    /// Merge `v[..na]` and `v[na..]` (both sorted, `na > len - na`), from
    /// the right. Positions are one past the current item, to stay unsigned.
    fn merge_hi(&mut self, v: &mut [usize], na: usize) -> InterpResult<()> {
        let tmp: Vec<usize> = v[na..].to_vec();
        let (mut na, mut nb) = (na, v.len() - na);
        // One past the last remaining item of a (in v), of b (in tmp), and
        // one past the next slot to fill.
        let (mut pa, mut pb, mut dest) = (na, nb, v.len());
        dest -= 1;
        pa -= 1;
        v[dest] = v[pa];
        na -= 1;
        let copy_a = 'merge: {
            if na == 0 {
                break 'merge false;
            }
            if nb == 1 {
                break 'merge true;
            }
            let mut min_gallop = self.min_gallop;
            loop {
                let (mut acount, mut bcount) = (0, 0);
                loop {
                    if self.lt(tmp[pb - 1], v[pa - 1])? {
                        dest -= 1;
                        pa -= 1;
                        v[dest] = v[pa];
                        acount += 1;
                        bcount = 0;
                        na -= 1;
                        if na == 0 {
                            break 'merge false;
                        }
                        if acount >= min_gallop {
                            break;
                        }
                    } else {
                        dest -= 1;
                        pb -= 1;
                        v[dest] = tmp[pb];
                        bcount += 1;
                        acount = 0;
                        nb -= 1;
                        if nb == 1 {
                            break 'merge true;
                        }
                        if bcount >= min_gallop {
                            break;
                        }
                    }
                }
                min_gallop += 1;
                loop {
                    min_gallop -= usize::from(min_gallop > 1);
                    self.min_gallop = min_gallop;
                    let k = na - self.gallop_right(tmp[pb - 1], &v[..na], na - 1)?;
                    acount = k;
                    if k > 0 {
                        dest -= k;
                        pa -= k;
                        v.copy_within(pa..pa + k, dest);
                        na -= k;
                        if na == 0 {
                            break 'merge false;
                        }
                    }
                    dest -= 1;
                    pb -= 1;
                    v[dest] = tmp[pb];
                    nb -= 1;
                    if nb == 1 {
                        break 'merge true;
                    }
                    let k = nb - self.gallop_left(v[pa - 1], &tmp[..nb], nb - 1)?;
                    bcount = k;
                    if k > 0 {
                        dest -= k;
                        pb -= k;
                        v[dest..dest + k].copy_from_slice(&tmp[pb..pb + k]);
                        nb -= k;
                        if nb == 1 {
                            break 'merge true;
                        }
                        if nb == 0 {
                            break 'merge false;
                        }
                    }
                    dest -= 1;
                    pa -= 1;
                    v[dest] = v[pa];
                    na -= 1;
                    if na == 0 {
                        break 'merge false;
                    }
                    if acount < MIN_GALLOP && bcount < MIN_GALLOP {
                        break;
                    }
                }
                min_gallop += 1;
                self.min_gallop = min_gallop;
            }
        };
        if copy_a {
            // The first item of b belongs at the front.
            v.copy_within(pa - na..pa, dest - na);
            v[dest - na - 1] = tmp[pb - 1];
        } else if nb > 0 {
            v[dest - nb..dest].copy_from_slice(&tmp[..nb]);
        }
        Ok(())
    }
}
