//! The builtin functions, with CPython's signatures, results and errors.

use num_bigint::BigInt;
use num_integer::Integer;
use num_traits::{Signed, ToPrimitive};
use std::rc::Rc;

use super::budget::{mem_check, mem_check_n, tick};
use super::compile::Builtin;
use super::err::{type_err, value_err, Exc, InterpResult};
use super::eval::{CallArgs, Interp};
use super::iter::Iter;
use super::methods::py_isspace;
use super::ops::{big_to_f64, binop, compare, lt, BinOp, OrderOp};
use super::value::{float_to_big, Dict, Func, RangeV, Value, SLOT};

fn exactly_one(a: &mut CallArgs, name: &str) -> InterpResult<Value> {
    a.no_kw(name)?;
    if a.pos.len() != 1 {
        return Err(type_err(format!(
            "{name}() takes exactly one argument ({} given)",
            a.pos.len()
        )));
    }
    Ok(a.pos.remove(0))
}

/// CPython's "`name` expected `n` argument(s), got `k`" for a builtin
/// that takes exactly `n` positional arguments.
fn expect_positional(a: &CallArgs, name: &str, n: usize) -> InterpResult<()> {
    if a.pos.len() == n {
        return Ok(());
    }
    let s = if n == 1 { "" } else { "s" };
    Err(type_err(format!(
        "{name} expected {n} argument{s}, got {}",
        a.pos.len()
    )))
}

/// `enumerate(iterable, start=0)`'s hand-written argument parsing in
/// CPython 3.11 (`enumerate_vectorcall`), messages and order included.
fn enumerate_args(a: CallArgs) -> InterpResult<(Value, Option<Value>)> {
    let CallArgs { pos, kw } = a;
    let (nargs, nkw) = (pos.len(), kw.len());
    let names: Vec<Rc<str>> = kw.iter().map(|(k, _)| k.clone()).collect();
    let check = |i: usize, want: &str| -> InterpResult<()> {
        match names.get(i) {
            Some(k) if &**k != want => Err(type_err(format!(
                "'{k}' is an invalid keyword argument for enumerate()"
            ))),
            _ => Ok(()),
        }
    };
    let mut vals = pos.into_iter().chain(kw.into_iter().map(|(_, v)| v));
    match nargs + nkw {
        2 => {
            if nkw == 1 {
                check(0, "start")?;
            } else if nkw == 2 {
                if names.first().is_some_and(|k| &**k == "start") {
                    check(1, "iterable")?;
                    let start = vals.next();
                    return Ok((vals.next().unwrap_or(Value::None), start));
                }
                check(0, "iterable")?;
                check(1, "start")?;
            }
            let it = vals.next().unwrap_or(Value::None);
            Ok((it, vals.next()))
        }
        1 => {
            if nkw == 1 {
                check(0, "iterable")?;
            }
            Ok((vals.next().unwrap_or(Value::None), None))
        }
        _ if nargs == 0 => Err(type_err("enumerate() missing required argument 'iterable'")),
        n => Err(type_err(format!(
            "enumerate() takes at most 2 arguments ({n} given)"
        ))),
    }
}

/// `sort_by(items, key, reverse=False)` bound as the Python function it is
/// specified as (keyword errors, then too many, then missing arguments).
fn sort_by_args(mut a: CallArgs) -> InterpResult<(Value, Value, Option<Value>)> {
    const NAMES: [&str; 3] = ["items", "key", "reverse"];
    let nargs = a.pos.len();
    let mut slots: [Option<Value>; 3] = [None, None, None];
    for (i, v) in std::mem::take(&mut a.pos).into_iter().enumerate().take(3) {
        slots[i] = Some(v);
    }
    for (k, v) in std::mem::take(&mut a.kw) {
        let Some(i) = NAMES.iter().position(|n| **n == *k) else {
            return Err(type_err(format!(
                "sort_by() got an unexpected keyword argument '{k}'"
            )));
        };
        if slots[i].is_some() {
            return Err(type_err(format!(
                "sort_by() got multiple values for argument '{k}'"
            )));
        }
        slots[i] = Some(v);
    }
    if nargs > 3 {
        return Err(type_err(format!(
            "sort_by() takes from 2 to 3 positional arguments but {nargs} were given"
        )));
    }
    let [items, key, rev] = slots;
    match (items, key) {
        (Some(i), Some(k)) => Ok((i, k, rev)),
        (None, None) => Err(type_err(
            "sort_by() missing 2 required positional arguments: 'items' and 'key'",
        )),
        (None, Some(_)) => Err(type_err(
            "sort_by() missing 1 required positional argument: 'items'",
        )),
        (Some(_), None) => Err(type_err(
            "sort_by() missing 1 required positional argument: 'key'",
        )),
    }
}

fn at_most(a: &CallArgs, name: &str, max: usize) -> InterpResult<()> {
    if a.pos.len() > max {
        return Err(type_err(format!(
            "{name} expected at most {max} argument{}, got {}",
            if max == 1 { "" } else { "s" },
            a.pos.len()
        )));
    }
    Ok(())
}

fn range_arg(v: &Value) -> InterpResult<i128> {
    let big = || {
        Exc::py(
            "OverflowError",
            "Python int too large to convert to C ssize_t",
        )
    };
    match v {
        Value::Int(i) => Ok(*i as i128),
        Value::Bool(b) => Ok(*b as i128),
        Value::Big(b) => match b.to_i128() {
            Some(x) if x.unsigned_abs() <= super::value::RANGE_BOUND as u128 => Ok(x),
            _ => Err(big()),
        },
        _ => Err(type_err(format!(
            "'{}' object cannot be interpreted as an integer",
            v.type_name()
        ))),
    }
}

fn index_arg(v: &Value) -> InterpResult<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Bool(b) => Ok(*b as i64),
        Value::Big(_) => Err(Exc::py(
            "OverflowError",
            "Python int too large to convert to C ssize_t",
        )),
        _ => Err(type_err(format!(
            "'{}' object cannot be interpreted as an integer",
            v.type_name()
        ))),
    }
}

/// Whitespace `int()` and `float()` strip: CPython copies ASCII as is and
/// maps only non-ASCII whitespace to a space before stripping ASCII
/// whitespace, so `\x1c`..`\x1f` (str.isspace() but not C isspace) stay.
fn num_space(c: char) -> bool {
    if c.is_ascii() {
        matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
    } else {
        py_isspace(c)
    }
}

/// `s` with every Unicode decimal digit replaced by its ASCII digit, as
/// CPython does before parsing a number (borrowed when already ASCII).
fn ascii_digits(s: &str) -> std::borrow::Cow<'_, str> {
    if s.is_ascii() {
        return std::borrow::Cow::Borrowed(s);
    }
    s.chars()
        .map(|c| {
            super::unicode::decimal(c)
                .and_then(|d| char::from_digit(d, 10))
                .unwrap_or(c)
        })
        .collect::<String>()
        .into()
}

/// Parse `int(text, base)` exactly as CPython 3.11.
///
/// # Errors
/// ValueError for invalid literals or the 4300-digit limit.
pub fn parse_int(orig: &str, base: u32) -> InterpResult<Value> {
    let bad = || {
        // CPython's `%.200R`: the repr cut at 200 code points.
        let repr = super::format::str_repr(orig);
        let cut = repr.char_indices().nth(200).map_or(repr.len(), |(i, _)| i);
        value_err(format!(
            "invalid literal for int() with base {base}: {}",
            &repr[..cut]
        ))
    };
    let ascii = ascii_digits(orig.trim_matches(num_space));
    let s = ascii.as_ref();
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (mut radix, mut digits) = (base, lower.as_str());
    let prefixed = |p: &str| lower.starts_with(p);
    if base == 0 || base == 16 || base == 8 || base == 2 {
        let p = if prefixed("0x") {
            Some(16)
        } else if prefixed("0o") {
            Some(8)
        } else if prefixed("0b") {
            Some(2)
        } else {
            None
        };
        if let Some(p) = p {
            if base == 0 || base == p {
                radix = p;
                digits = &lower[2..];
                // A prefix may be followed by an underscore.
                if let Some(d) = digits.strip_prefix('_') {
                    digits = d;
                }
            }
        }
        if base == 0 && p.is_none() {
            radix = 10;
            // Base 0: no leading zeros on a non-zero decimal.
            let t: String = digits.chars().filter(|c| *c != '_').collect();
            if t.len() > 1 && t.starts_with('0') && t.chars().any(|c| c != '0') {
                return Err(bad());
            }
        }
    }
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
    {
        return Err(bad());
    }
    let clean: String = digits.chars().filter(|c| *c != '_').collect();
    if !clean.chars().all(|c| c.is_digit(radix)) {
        return Err(bad());
    }
    if !radix.is_power_of_two() && clean.len() > 4300 {
        return Err(value_err(format!(
            "Exceeds the limit (4300 digits) for integer string conversion: value has {} digits; use sys.set_int_max_str_digits() to increase the limit",
            clean.len()
        )));
    }
    mem_check(clean.len() as u64)?;
    tick(1 + clean.len() as u64 / 16)?;
    if clean.len() <= 18 && radix == 10 {
        let v: i64 = clean.parse().map_err(|_| bad())?;
        return Ok(Value::Int(if neg { -v } else { v }));
    }
    let b = BigInt::parse_bytes(clean.as_bytes(), radix).ok_or_else(bad)?;
    Ok(Value::from_big(if neg { -b } else { b }))
}

/// Parse `float(text)` as CPython.
///
/// # Errors
/// ValueError `could not convert string to float: '...'`.
pub fn parse_float(orig: &str) -> InterpResult<f64> {
    let bad = || {
        value_err(format!(
            "could not convert string to float: {}",
            super::format::str_repr(orig)
        ))
    };
    let ascii = ascii_digits(orig.trim_matches(num_space));
    let s = ascii.as_ref();
    let body = s.trim_start_matches(['+', '-']);
    if s.len() - body.len() > 1 {
        return Err(bad());
    }
    let lower = body.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity" | "nan") {
        let v: f64 = if lower == "nan" {
            super::value::fresh_nan()
        } else {
            f64::INFINITY
        };
        return Ok(if s.starts_with('-') { -v } else { v });
    }
    // Underscores only between digits.
    let b = s.as_bytes();
    for (i, c) in b.iter().enumerate() {
        if *c == b'_' {
            let ok =
                i > 0 && i + 1 < b.len() && b[i - 1].is_ascii_digit() && b[i + 1].is_ascii_digit();
            if !ok {
                return Err(bad());
            }
        }
    }
    if !s
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-' | b'_'))
    {
        return Err(bad());
    }
    let clean: String = s.chars().filter(|c| *c != '_').collect();
    clean.parse::<f64>().map_err(|_| bad())
}

/// Python's `round(f)` (banker's rounding to an int).
///
/// # Errors
/// OverflowError for infinities, ValueError for NaN.
pub fn float_to_int(f: f64) -> InterpResult<Value> {
    if f.is_nan() {
        return Err(value_err("cannot convert float NaN to integer"));
    }
    if f.is_infinite() {
        return Err(Exc::py(
            "OverflowError",
            "cannot convert float infinity to integer",
        ));
    }
    if f.abs() < 9.0e18 {
        return Ok(Value::Int(f as i64));
    }
    Ok(Value::from_big(float_to_big(f).unwrap_or_default()))
}

fn round_float(x: f64, nd: i64) -> InterpResult<f64> {
    if !x.is_finite() || x == 0.0 {
        return Ok(x);
    }
    if nd > 330 {
        return Ok(x);
    }
    if nd >= 0 {
        let s = format!("{:.*}", nd as usize, x);
        let r: f64 = s.parse().map_err(|_| Exc::internal("round"))?;
        return Ok(if r == 0.0 { 0.0f64.copysign(x) } else { r });
    }
    if nd < -330 {
        return Ok(0.0f64.copysign(x));
    }
    // Exact: x is an integer-valued rational m*2^e; round to a multiple of 10^-nd.
    let p = BigInt::from(10).pow((-nd) as u32);
    let (mant, exp, sign) = decode(x);
    let (num, den) = if exp >= 0 {
        (BigInt::from(mant) << exp as usize, BigInt::from(1))
    } else {
        (BigInt::from(mant), BigInt::from(1) << (-exp) as usize)
    };
    // q = round_half_even(num / (den * p))
    let d = den * &p;
    let (q, r) = num.div_rem(&d);
    let twice: BigInt = r * 2;
    let q = match twice.cmp(&d) {
        std::cmp::Ordering::Greater => q + 1,
        std::cmp::Ordering::Equal => {
            if q.is_odd() {
                q + 1
            } else {
                q
            }
        }
        std::cmp::Ordering::Less => q,
    };
    let v = q * p;
    let f = v.to_f64().unwrap_or(f64::INFINITY);
    if f.is_infinite() {
        return Err(Exc::py(
            "OverflowError",
            "rounded value too large to represent",
        ));
    }
    Ok(if sign < 0 { -f } else { f })
}

fn decode(x: f64) -> (u64, i64, i8) {
    let bits = x.to_bits();
    let sign: i8 = if bits >> 63 == 0 { 1 } else { -1 };
    let exp = ((bits >> 52) & 0x7ff) as i64;
    let mant = if exp == 0 {
        (bits & 0xfffffffffffff) << 1
    } else {
        (bits & 0xfffffffffffff) | 0x10000000000000
    };
    (mant, exp - 1075, sign)
}

const TYPE_NAMES: &[(Builtin, &str)] = &[
    (Builtin::Str, "str"),
    (Builtin::Int, "int"),
    (Builtin::Float, "float"),
    (Builtin::Bool, "bool"),
    (Builtin::List, "list"),
    (Builtin::Dict, "dict"),
    (Builtin::Set, "set"),
    (Builtin::Tuple, "tuple"),
];

fn is_instance(v: &Value, t: Builtin) -> bool {
    match t {
        Builtin::Str => matches!(v, Value::Str(_)),
        Builtin::Int => matches!(v, Value::Int(_) | Value::Big(_) | Value::Bool(_)),
        Builtin::Float => matches!(v, Value::Float(_)),
        Builtin::Bool => matches!(v, Value::Bool(_)),
        Builtin::List => matches!(v, Value::List(_)),
        Builtin::Dict => matches!(v, Value::Dict(_)),
        Builtin::Set => matches!(v, Value::Set(_)),
        Builtin::Tuple => matches!(v, Value::Tuple(_)),
        _ => false,
    }
}

/// `isinstance(v, spec)` as CPython's `object_recursive_isinstance`: a
/// type, or a tuple of specs tried in order (the first match or error
/// ends it, so `(int, [str])` is true for an int); anything else (a list of
/// types) is a TypeError. Tuple nesting comes from the program text (types
/// are no values a program can store), bounded here all the same.
fn isinstance_of(v: &Value, spec: &Value, depth: usize) -> InterpResult<bool> {
    match spec {
        Value::Func(f) => match &**f {
            Func::Builtin(tb) if TYPE_NAMES.iter().any(|(x, _)| x == tb) => {
                return Ok(is_instance(v, *tb));
            }
            _ => {}
        },
        Value::Tuple(t) if depth < 1000 => {
            for s in t.v.iter() {
                if isinstance_of(v, s, depth + 1)? {
                    return Ok(true);
                }
            }
            return Ok(false);
        }
        Value::Tuple(_) => {
            return Err(Exc::py(
                "RecursionError",
                "maximum recursion depth exceeded in __instancecheck__",
            ))
        }
        _ => {}
    }
    Err(type_err(
        "isinstance() arg 2 must be a type, a tuple of types, or a union",
    ))
}

impl<'a> Interp<'a> {
    /// Call a builtin.
    ///
    /// # Errors
    /// CPython's errors for each builtin.
    pub fn call_builtin(&mut self, b: Builtin, mut a: CallArgs) -> InterpResult<Value> {
        match b {
            Builtin::Len => {
                let v = exactly_one(&mut a, "len")?;
                let n = match &v {
                    Value::Str(s) => s.nchars,
                    Value::List(l) => l.v.borrow().len(),
                    Value::Tuple(t) => t.v.len(),
                    Value::Dict(d) | Value::Keys(d) | Value::Items(d) => d.d.borrow().len(),
                    Value::Values(v) => v.0.d.borrow().len(),
                    Value::Set(s) => s.d.borrow().len(),
                    Value::Range(r) => {
                        let n = r.len128();
                        if n > i64::MAX as i128 {
                            return Err(Exc::py(
                                "OverflowError",
                                "Python int too large to convert to C ssize_t",
                            ));
                        }
                        n as usize
                    }
                    _ => {
                        return Err(type_err(format!(
                            "object of type '{}' has no len()",
                            v.type_name()
                        )))
                    }
                };
                Ok(Value::Int(n as i64))
            }
            Builtin::Range => {
                a.no_kw("range")?;
                let n = a.pos.len();
                if n == 0 {
                    return Err(type_err("range expected at least 1 argument, got 0"));
                }
                at_most(&a, "range", 3)?;
                let vals = a
                    .pos
                    .iter()
                    .map(range_arg)
                    .collect::<InterpResult<Vec<i128>>>()?;
                let (start, stop, step) = match vals.as_slice() {
                    [e] => (0, *e, 1),
                    [s, e] => (*s, *e, 1),
                    [s, e, st] => (*s, *e, *st),
                    _ => return Err(Exc::internal("range")),
                };
                if step == 0 {
                    return Err(value_err("range() arg 3 must not be zero"));
                }
                Ok(Value::Range(Rc::new(RangeV { start, stop, step })))
            }
            Builtin::Enumerate => {
                let (it, start) = enumerate_args(a)?;
                let start = start.unwrap_or(Value::Int(0));
                if !matches!(start, Value::Int(_) | Value::Big(_) | Value::Bool(_)) {
                    return Err(type_err(format!(
                        "'{}' object cannot be interpreted as an integer",
                        start.type_name()
                    )));
                }
                let start = if let Value::Bool(b) = start {
                    Value::Int(b as i64)
                } else {
                    start
                };
                let inner = self.iterate(&it)?;
                self.iter_value(Iter::Enumerate(Box::new(inner), start))
            }
            Builtin::Zip => {
                let pos = std::mem::take(&mut a.pos);
                let strict = a
                    .clinic("zip", 0, &["strict"], 0, 0)?
                    .pop()
                    .flatten()
                    .is_some_and(|v| v.truthy());
                a.pos = pos;
                let mut its = Vec::with_capacity(a.pos.len());
                for (i, v) in a.pos.iter().enumerate() {
                    if !self.is_iterable(v) {
                        let _ = i;
                        return Err(type_err(format!(
                            "'{}' object is not iterable",
                            v.type_name()
                        )));
                    }
                    its.push(self.iterate(v)?);
                }
                self.iter_value(Iter::Zip(its, strict))
            }
            Builtin::Sorted => {
                // As CPython: the positional count, then `list(iterable)`,
                // then `list.sort`'s own keyword checks.
                expect_positional(&a, "sorted", 1)?;
                let src = a.pos.remove(0);
                let items = self.collect(&src)?;
                drop(src);
                let mut kw = a.clinic("sort", 0, &["key", "reverse"], 0, 0)?.into_iter();
                let key = kw.next().flatten();
                let rev = kw.next().flatten();
                let reverse = super::methods::reverse_flag(rev.as_ref())?;
                match self.sort_values(items, key.as_ref(), reverse) {
                    Ok(v) => Ok(Value::list(v)),
                    Err((e, _)) => Err(e),
                }
            }
            Builtin::Reversed => {
                a.no_kw("reversed")?;
                expect_positional(&a, "reversed", 1)?;
                let v = a.pos.remove(0);
                if let Some((d, kind)) = v.dict_or_view() {
                    let (raw, size) = {
                        let dd = d.d.borrow();
                        (dd.raw_len(), dd.len())
                    };
                    return self.iter_value(Iter::RevDict(d.clone(), raw, size, kind));
                }
                let n = match &v {
                    Value::List(l) => l.v.borrow().len(),
                    Value::Tuple(t) => t.v.len(),
                    Value::Str(s) => s.nchars,
                    Value::Range(r) => {
                        // A range longer than usize::MAX: iterate the last
                        // usize::MAX elements of it (counting stays in
                        // usize), which start where the range's real last
                        // element says.
                        let n = r.len();
                        let skip = r.len128() - n as i128;
                        if skip > 0 {
                            let tail = RangeV {
                                start: r.start + skip * r.step,
                                ..**r
                            };
                            return self.iter_value(Iter::Rev(Value::Range(Rc::new(tail)), n));
                        }
                        n
                    }
                    _ => {
                        return Err(type_err(format!(
                            "'{}' object is not reversible",
                            v.type_name()
                        )))
                    }
                };
                self.iter_value(Iter::Rev(v, n))
            }
            Builtin::Min | Builtin::Max => self.min_max(b, a),
            Builtin::Sum => {
                let mut p = a.clinic("sum", 1, &["start"], 1, 2)?.into_iter();
                let src = p.next().flatten().unwrap_or(Value::None);
                let start = p.next().flatten().unwrap_or(Value::Int(0));
                // CPython takes iter(iterable) before it looks at start.
                if !self.is_iterable(&src) {
                    return Err(type_err(format!(
                        "'{}' object is not iterable",
                        src.type_name()
                    )));
                }
                match &start {
                    Value::Str(_) => {
                        return Err(type_err(
                            "sum() can't sum strings [use ''.join(seq) instead]",
                        ))
                    }
                    Value::List(_) | Value::Tuple(_) => {}
                    _ => {}
                }
                let mut acc = start;
                // `sum(f(x) for x in xs)`: the generator resumed in a loop.
                let folded = self.fold_gen(&src, &mut |x| {
                    tick(1)?;
                    acc = sum_add(&acc, &x)?;
                    Ok(true)
                });
                if let Some(r) = folded {
                    return r.map(|()| acc);
                }
                let mut it = self.iterate(&src)?;
                while let Some(x) = self.next(&mut it)? {
                    tick(1)?;
                    acc = sum_add(&acc, &x)?;
                }
                Ok(acc)
            }
            Builtin::Any | Builtin::All => {
                let v = exactly_one(&mut a, b.name())?;
                let want = b == Builtin::Any;
                // `any(p(x) for x in xs)`: the generator resumed in a loop,
                // left resumable at the deciding item as when pulled.
                let mut found = false;
                let folded = self.fold_gen(&v, &mut |x| {
                    tick(1)?;
                    found = x.truthy() == want;
                    Ok(!found)
                });
                if let Some(r) = folded {
                    r?;
                    return Ok(Value::Bool(if found { want } else { !want }));
                }
                let mut it = self.iterate(&v)?;
                while let Some(x) = self.next(&mut it)? {
                    tick(1)?;
                    if x.truthy() == want {
                        return Ok(Value::Bool(want));
                    }
                }
                Ok(Value::Bool(!want))
            }
            Builtin::Abs => {
                let v = exactly_one(&mut a, "abs")?;
                Ok(match &v {
                    Value::Int(i) => match i.checked_abs() {
                        Some(r) => Value::Int(r),
                        None => Value::from_big(BigInt::from(*i).abs()),
                    },
                    Value::Bool(x) => Value::Int(*x as i64),
                    Value::Big(x) => Value::from_big(x.abs()),
                    Value::Float(f) => Value::new_float(f.abs()),
                    _ => {
                        return Err(type_err(format!(
                            "bad operand type for abs(): '{}'",
                            v.type_name()
                        )))
                    }
                })
            }
            Builtin::Round => {
                let mut p = a
                    .clinic("round", 0, &["number", "ndigits"], 1, 2)?
                    .into_iter();
                let x = p.next().flatten().unwrap_or(Value::None);
                let nd = p.next().flatten().filter(|v| !matches!(v, Value::None));
                // CPython looks up `__round__` before it converts `ndigits`.
                if !matches!(
                    x,
                    Value::Float(_) | Value::Int(_) | Value::Big(_) | Value::Bool(_)
                ) {
                    return Err(type_err(format!(
                        "type {} doesn't define __round__ method",
                        x.type_name()
                    )));
                }
                let nd = match nd {
                    Some(v) => Some(match &v {
                        Value::Int(i) => *i,
                        Value::Bool(b) => *b as i64,
                        Value::Big(b) => {
                            if b.is_negative() {
                                i64::MIN / 2
                            } else {
                                i64::MAX / 2
                            }
                        }
                        _ => {
                            return Err(type_err(format!(
                                "'{}' object cannot be interpreted as an integer",
                                v.type_name()
                            )))
                        }
                    }),
                    None => None,
                };
                match (&x, nd) {
                    (Value::Float(f), None) => float_to_int(f.round_ties_even()),
                    (Value::Float(f), Some(n)) => Ok(Value::new_float(round_float(*f, n)?)),
                    (Value::Int(_) | Value::Big(_) | Value::Bool(_), None) => Ok(match x {
                        Value::Bool(b) => Value::Int(b as i64),
                        other => other,
                    }),
                    (Value::Int(_) | Value::Big(_) | Value::Bool(_), Some(n)) => {
                        if n >= 0 {
                            return Ok(match x {
                                Value::Bool(b) => Value::Int(b as i64),
                                other => other,
                            });
                        }
                        let v = super::ops::to_big(&x).unwrap_or_default();
                        if -n > 100_000 {
                            return Ok(Value::Int(0));
                        }
                        let p = BigInt::from(10).pow((-n) as u32);
                        let (q, r) = v.div_mod_floor(&p);
                        let twice: BigInt = r * 2;
                        let q = match twice.cmp(&p) {
                            std::cmp::Ordering::Greater => q + 1,
                            std::cmp::Ordering::Equal if q.is_odd() => q + 1,
                            _ => q,
                        };
                        Ok(Value::from_big(q * p))
                    }
                    _ => Err(type_err(format!(
                        "type {} doesn't define __round__ method",
                        x.type_name()
                    ))),
                }
            }
            Builtin::Str => {
                let mut p = a
                    .clinic("str", 0, &["object", "encoding", "errors"], 0, 3)?
                    .into_iter();
                let obj = p.next().flatten();
                let (enc, errs) = (p.next().flatten(), p.next().flatten());
                if enc.is_some() || errs.is_some() {
                    // str(x, encoding, errors) decodes bytes, which lackpy
                    // does not have: CPython's conversion errors.
                    for (what, v) in [("encoding", &enc), ("errors", &errs)] {
                        if let Some(v) = v.as_ref().filter(|v| !matches!(v, Value::Str(_))) {
                            return Err(type_err(format!(
                                "str() argument '{what}' must be str, not {}",
                                if matches!(v, Value::None) {
                                    "None"
                                } else {
                                    v.type_name()
                                }
                            )));
                        }
                    }
                    return match obj {
                        None => Ok(Value::str("")),
                        Some(Value::Str(_)) => Err(type_err("decoding str is not supported")),
                        Some(v) => Err(type_err(format!(
                            "decoding to str: need a bytes-like object, {} found",
                            v.type_name()
                        ))),
                    };
                }
                match obj {
                    None => Ok(Value::str("")),
                    Some(v @ Value::Str(_)) => Ok(v),
                    Some(v) => Ok(Value::str(self.to_str(&v)?)),
                }
            }
            Builtin::Repr => {
                let v = exactly_one(&mut a, "repr")?;
                Ok(Value::str(self.repr(&v)?))
            }
            Builtin::Int => {
                let mut p = a.clinic("int", 1, &["base"], 0, 2)?.into_iter();
                let x = p.next().flatten();
                let base = p.next().flatten();
                match (x, base) {
                    (None, None) => Ok(Value::Int(0)),
                    (None, Some(_)) => Err(type_err("int() missing string argument")),
                    (Some(x), Some(bv)) => {
                        // PyNumber_AsSsize_t(base, NULL) clamps a huge base,
                        // which then fails the range check.
                        let base = match bv {
                            Value::Big(_) => -1,
                            _ => index_arg(&bv)?,
                        };
                        if !(base == 0 || (2..=36).contains(&base)) {
                            return Err(value_err("int() base must be >= 2 and <= 36, or 0"));
                        }
                        match &x {
                            Value::Str(s) => parse_int(s.as_str(), base as u32),
                            _ => Err(type_err("int() can't convert non-string with explicit base")),
                        }
                    }
                    (Some(x), None) => match &x {
                        Value::Int(_) | Value::Big(_) => Ok(x),
                        Value::Bool(b) => Ok(Value::Int(*b as i64)),
                        Value::Float(f) => float_to_int(f.trunc()),
                        Value::Str(s) => parse_int(s.as_str(), 10),
                        _ => Err(type_err(format!(
                            "int() argument must be a string, a bytes-like object or a real number, not '{}'",
                            x.type_name()
                        ))),
                    },
                }
            }
            Builtin::Float => {
                a.no_kw("float")?;
                at_most(&a, "float", 1)?;
                match a.pos.first() {
                    None => Ok(Value::Float(0.0)),
                    Some(x) => Ok(Value::Float(match x {
                        Value::Float(f) => *f,
                        Value::Int(i) => *i as f64,
                        Value::Bool(b) => *b as i64 as f64,
                        Value::Big(b) => big_to_f64(b)?,
                        Value::Str(s) => parse_float(s.as_str())?,
                        _ => {
                            return Err(type_err(format!(
                                "float() argument must be a string or a real number, not '{}'",
                                x.type_name()
                            )))
                        }
                    })),
                }
            }
            Builtin::Bool => {
                a.no_kw("bool")?;
                at_most(&a, "bool", 1)?;
                Ok(Value::Bool(a.pos.first().is_some_and(|v| v.truthy())))
            }
            Builtin::List | Builtin::Tuple | Builtin::Set => {
                a.no_kw(b.name())?;
                at_most(&a, b.name(), 1)?;
                if let (Builtin::Set, Some(v @ Value::Iter(_))) = (b, a.pos.first()) {
                    let mut d = Dict::new();
                    self.items_into(v, &mut |x| d.insert(x, Value::None).map(drop))?;
                    return Ok(Value::set(d));
                }
                let items = match a.pos.first() {
                    None => Vec::new(),
                    Some(v) => self.collect(v)?,
                };
                Ok(match b {
                    Builtin::List => Value::list(items),
                    Builtin::Tuple => Value::tuple(items),
                    _ => {
                        // The table is sized by the items: preflighted.
                        tick(items.len() as u64 / 8)?;
                        mem_check_n(items.len() as u64, super::value::ENTRY as u64)?;
                        let mut d = Dict::new();
                        for x in items {
                            d.insert(x, Value::None)?;
                        }
                        // `set(a_set)` is a copy of its table (`set_merge`);
                        // `set(a_dict)` sizes the table once, then adds.
                        match a.pos.first() {
                            Some(Value::Set(src)) => Value::set_with(d, src.model_copy()),
                            Some(Value::Dict(_)) => {
                                let m = super::value::model_presized(&d);
                                Value::set_with(d, m)
                            }
                            _ => Value::set(d),
                        }
                    }
                })
            }
            Builtin::Dict => {
                at_most(&a, "dict", 1)?;
                let mut d = Dict::new();
                if let Some(src) = a.pos.first() {
                    if let Value::Dict(o) = src {
                        let o = o.d.borrow();
                        tick(o.len() as u64 / 8)?;
                        mem_check_n(o.len() as u64, super::value::ENTRY as u64)?;
                        d.merge_from(&o);
                    } else {
                        self.pairs_into(src, &mut |k, v| d.insert(k, v).map(drop))?;
                    }
                }
                for (k, v) in a.kw {
                    d.insert(Value::str(&*k), v)?;
                }
                Ok(Value::dict(d))
            }
            Builtin::Isinstance => {
                a.no_kw("isinstance")?;
                expect_positional(&a, "isinstance", 2)?;
                Ok(Value::Bool(isinstance_of(&a.pos[0], &a.pos[1], 0)?))
            }
            Builtin::Print => {
                let args = std::mem::take(&mut a.pos);
                let mut kw = a
                    .clinic("print", 0, &["sep", "end", "file", "flush"], 0, 0)?
                    .into_iter();
                let (sep, end) = (kw.next().flatten(), kw.next().flatten());
                let file = kw.next().flatten().filter(|f| !matches!(f, Value::None));
                a.pos = args;
                let get = |v: Option<Value>, d: &str, what: &str| -> InterpResult<String> {
                    match v {
                        None | Some(Value::None) => Ok(d.to_string()),
                        Some(Value::Str(s)) => Ok(s.as_str().to_string()),
                        Some(o) => Err(type_err(format!(
                            "{what} must be None or a string, not {}",
                            o.type_name()
                        ))),
                    }
                };
                let sep = get(sep, " ", "sep")?;
                let end = get(end, "\n", "end")?;
                if let Some(f) = file {
                    // Nothing a program holds has a `write` method.
                    return Err(Exc::py(
                        "AttributeError",
                        format!("'{}' object has no attribute 'write'", f.type_name()),
                    ));
                }
                let mut text = String::new();
                // Surrogate mode: where each piece starts (CPython writes
                // them one by one, and the first holding a surrogate fails).
                let pieces = super::surrogate::on();
                let mut starts = Vec::new();
                for (i, v) in a.pos.iter().enumerate() {
                    if i > 0 {
                        if pieces {
                            starts.push(text.len());
                        }
                        text.push_str(&sep);
                    }
                    if pieces {
                        starts.push(text.len());
                    }
                    match v {
                        Value::Str(s) => text.push_str(s.as_str()),
                        _ => text.push_str(&self.to_str(v)?),
                    }
                    // Past the output limit already: stop building (the same
                    // `output` error, before the text outgrows memory).
                    if self.out_bytes.saturating_add(text.len() as u64) > self.limits.stdout_bytes {
                        return self.write_out(&text).map(|()| Value::None);
                    }
                }
                if pieces {
                    starts.push(text.len());
                }
                text.push_str(&end);
                if let Some((ok, e)) = super::surrogate::print_error(&text, &starts) {
                    self.write_out(text.get(..ok).unwrap_or(""))?;
                    return Err(e);
                }
                self.write_out(&text)?;
                Ok(Value::None)
            }
            Builtin::SortBy => {
                let (items, field, rev) = sort_by_args(a)?;
                let items = self.collect(&items)?;
                // `sorted(items, key=..., reverse=reverse)`: the flag is
                // converted before any key is computed.
                let reverse = super::methods::reverse_flag(rev.as_ref())?;
                // The keys, the order, the permutation and the result are
                // sized by the items: preflighted before any is built.
                mem_check_n(
                    items.len() as u64,
                    super::methods::SORT_BYTES_PER_ITEM + SLOT as u64,
                )?;
                let mut keys = Vec::with_capacity(items.len());
                for it in &items {
                    tick(1)?;
                    let k = match &field {
                        Value::Func(_) => self.call_func(&field, it.clone())?,
                        _ => self.getitem(it, &field)?,
                    };
                    keys.push(k);
                }
                let out =
                    super::methods::sort_with_keys(items, keys, reverse).map_err(|(e, _)| e)?;
                mem_check_n(out.len() as u64, SLOT as u64)?;
                Ok(Value::list(out))
            }
        }
    }

    /// Write printed text, enforcing the output limit.
    ///
    /// # Errors
    /// `output` limit.
    pub fn write_out(&mut self, text: &str) -> InterpResult<()> {
        self.out_bytes = self.out_bytes.saturating_add(text.len() as u64);
        let lim = self.limits.stdout_bytes;
        if self.out_bytes > lim {
            return Err(Exc::limit(
                "output",
                format!("output limit exceeded: the program printed more than {lim} bytes"),
            ));
        }
        if !self.out.write(text) {
            return Err(Exc::limit(
                "output",
                format!("output limit exceeded: the program printed more than {lim} bytes"),
            ));
        }
        Ok(())
    }

    fn min_max(&mut self, b: Builtin, mut a: CallArgs) -> InterpResult<Value> {
        let name = b.name();
        if a.pos.is_empty() {
            return Err(type_err(format!(
                "{name} expected at least 1 argument, got 0"
            )));
        }
        let pos = std::mem::take(&mut a.pos);
        let mut kw = a.clinic(name, 0, &["key", "default"], 0, 0)?.into_iter();
        a.pos = pos;
        let key = kw.next().flatten().filter(|k| !matches!(k, Value::None));
        let default = kw.next().flatten();
        if a.pos.len() > 1 && default.is_some() {
            return Err(type_err(format!(
                "Cannot specify a default for {name}() with multiple positional arguments"
            )));
        }
        // As CPython's min_max: items are pulled one at a time, each one's
        // key computed and compared before the next is pulled (a key that
        // changes the list being iterated, a generator that fails later).
        let mut best: Option<(Value, Value)> = None;
        if a.pos.len() == 1 {
            let mut it = self.iterate(&a.pos[0])?;
            while let Some(x) = self.next(&mut it)? {
                self.min_max_step(b, key.as_ref(), &mut best, x)?;
            }
        } else {
            for x in std::mem::take(&mut a.pos).into_vec() {
                self.min_max_step(b, key.as_ref(), &mut best, x)?;
            }
        }
        if best.is_none() {
            if let Some(d) = default {
                return Ok(d);
            }
        }
        best.map(|(_, x)| x)
            .ok_or_else(|| value_err(format!("{name}() arg is an empty sequence")))
    }

    /// One item of [`Interp::min_max`]: its key, then the comparison with
    /// the best so far (`<` for min, `>` for max; ties keep the first).
    fn min_max_step(
        &mut self,
        b: Builtin,
        key: Option<&Value>,
        best: &mut Option<(Value, Value)>,
        x: Value,
    ) -> InterpResult<()> {
        tick(1)?;
        let k = match key {
            Some(f) => self.call_func(f, x.clone())?,
            None => x.clone(),
        };
        let better = match best {
            None => true,
            Some((bk, _)) => {
                if b == Builtin::Max {
                    compare(OrderOp::Gt, &k, bk)?
                } else {
                    lt(&k, bk)?
                }
            }
        };
        if better {
            *best = Some((k, x));
        }
        Ok(())
    }
}

/// One step of `sum()`: `acc + x` (small ints and floats inline).
fn sum_add(acc: &Value, x: &Value) -> InterpResult<Value> {
    Ok(match (acc, x) {
        (Value::Int(p), Value::Int(q)) => match p.checked_add(*q) {
            Some(r) => Value::Int(r),
            None => binop(BinOp::Add, acc, x)?,
        },
        (Value::Float(p), Value::Float(q)) => Value::new_float(p + q),
        _ => binop(BinOp::Add, acc, x)?,
    })
}
