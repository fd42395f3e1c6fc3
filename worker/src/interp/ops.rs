//! Operators with CPython 3.11 semantics: arithmetic over the int/float
//! tower, sequence concatenation and repetition, equality and ordering.

use num_bigint::BigInt;
use num_integer::Integer;
use num_traits::{Signed, ToPrimitive, Zero};
use std::cmp::Ordering;
use std::rc::Rc;

use super::budget::{mem_check, mem_check_n, tick};
use super::err::{type_err, Exc, InterpResult};
use super::value::{float_to_big, Dict, Value, ViewKind, MAX_REC, SLOT};

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `//`
    FloorDiv,
    /// `%`
    Mod,
}

impl BinOp {
    /// Operator symbol.
    pub fn sym(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
        }
    }
}

/// A number view of a value (bool counts as int).
pub enum Num<'a> {
    /// Small int.
    I(i64),
    /// Big int.
    B(&'a BigInt),
    /// Float.
    F(f64),
}

/// View a value as a number.
#[inline]
pub fn num(v: &Value) -> Option<Num<'_>> {
    match v {
        Value::Int(i) => Some(Num::I(*i)),
        Value::Bool(b) => Some(Num::I(*b as i64)),
        Value::Big(b) => Some(Num::B(b)),
        Value::Float(f) => Some(Num::F(*f)),
        _ => None,
    }
}

/// An int value as BigInt (None for non-ints).
pub fn to_big(v: &Value) -> Option<BigInt> {
    match v {
        Value::Int(i) => Some(BigInt::from(*i)),
        Value::Bool(b) => Some(BigInt::from(*b as i64)),
        Value::Big(b) => Some((**b).clone()),
        _ => None,
    }
}

/// Convert a big int to float, CPython style.
///
/// # Errors
/// `OverflowError: int too large to convert to float`.
pub fn big_to_f64(b: &BigInt) -> InterpResult<f64> {
    match b.to_f64() {
        Some(f) if f.is_finite() => Ok(f),
        _ => Err(Exc::py(
            "OverflowError",
            "int too large to convert to float",
        )),
    }
}

fn as_f64(n: &Num) -> InterpResult<f64> {
    Ok(match n {
        Num::I(i) => *i as f64,
        Num::B(b) => big_to_f64(b)?,
        Num::F(f) => *f,
    })
}

fn nb(n: &Num) -> BigInt {
    nb_ref(n).into_owned()
}

/// [`nb`] without copying a big operand (arithmetic reads it in place).
fn nb_ref<'a>(n: &Num<'a>) -> std::borrow::Cow<'a, BigInt> {
    match n {
        Num::I(i) => std::borrow::Cow::Owned(BigInt::from(*i)),
        Num::B(b) => std::borrow::Cow::Borrowed(*b),
        Num::F(_) => std::borrow::Cow::Owned(BigInt::zero()),
    }
}

/// Fuel for an arbitrary-precision operation on operands of these sizes.
fn big_cost(a: &Num, b: &Num) -> InterpResult<()> {
    let bits = |n: &Num| match n {
        Num::B(b) => b.bits(),
        _ => 64,
    };
    let (x, y) = (bits(a), bits(b));
    tick(1 + (x.max(y) / 64))
}

fn unsupported(op: &str, a: &Value, b: &Value) -> Box<Exc> {
    type_err(format!(
        "unsupported operand type(s) for {op}: '{}' and '{}'",
        a.type_name(),
        b.type_name()
    ))
}

/// `x op y` on two small ints when the result is a small int too (the
/// fast path of [`binop`], also used inline by the evaluator); None when
/// the op needs the general path (overflow, division by zero, `/`, ...).
#[inline]
pub fn int_binop(op: BinOp, x: i64, y: i64) -> Option<i64> {
    match op {
        BinOp::Add => x.checked_add(y),
        BinOp::Sub => x.checked_sub(y),
        BinOp::Mul => x.checked_mul(y),
        BinOp::FloorDiv if y != 0 && !(x == i64::MIN && y == -1) => {
            Some(Integer::div_floor(&x, &y))
        }
        BinOp::Mod if y != 0 && !(x == i64::MIN && y == -1) => Some(Integer::mod_floor(&x, &y)),
        _ => None,
    }
}

/// Apply a binary operator.
///
/// # Errors
/// TypeError, ZeroDivisionError, OverflowError, or a memory/fuel limit.
pub fn binop(op: BinOp, a: &Value, b: &Value) -> InterpResult<Value> {
    // Fast path: two small ints.
    if let (Value::Int(x), Value::Int(y)) = (a, b) {
        if let Some(r) = int_binop(op, *x, *y) {
            return Ok(Value::Int(r));
        }
    }
    if let (Some(x), Some(y)) = (num(a), num(b)) {
        return num_binop(op, &x, &y);
    }
    match op {
        BinOp::Add => add_seq(a, b),
        BinOp::Mul => mul_seq(a, b),
        BinOp::Sub => match (a, b) {
            _ if (a.as_view().is_some() && (b.as_view().is_some() || matches!(b, Value::Set(_))))
                || (matches!(a, Value::Set(_)) && b.as_view().is_some()) =>
            {
                let to_set = |v: &Value| -> InterpResult<Dict> {
                    let mut d = Dict::new();
                    match v {
                        Value::Set(s) => {
                            s.in_order()?;
                            for k in s.d.borrow().keys() {
                                d.insert(k.clone(), Value::None)?;
                            }
                        }
                        Value::Keys(_) | Value::Values(_) | Value::Items(_) => {
                            let Some((src, kind)) = v.as_view() else {
                                return Ok(d);
                            };
                            for (k, x) in src.d.borrow().iter() {
                                tick(1)?;
                                let item = match kind {
                                    ViewKind::Keys => k.clone(),
                                    ViewKind::Values => x.clone(),
                                    ViewKind::Items => Value::tuple(vec![k.clone(), x.clone()]),
                                };
                                d.insert(item, Value::None)?;
                            }
                        }
                        _ => {}
                    }
                    Ok(d)
                };
                if matches!(a, Value::Values(_)) || matches!(b, Value::Values(_)) {
                    return Err(unsupported("-", a, b));
                }
                let (x, y) = (to_set(a)?, to_set(b)?);
                set_difference(&x, &y)
            }
            (Value::Set(x), Value::Set(y)) => {
                x.in_order()?;
                let (xd, yd) = (x.d.borrow(), y.d.borrow());
                // CPython copies `x` and removes when `y` is much smaller,
                // else adds `x`'s keys that `y` lacks to a new set.
                if (xd.len() >> 2) <= yd.len() {
                    return set_difference(&xd, &yd);
                }
                let mut d = xd.copy();
                let mut model = x.model_copy();
                for k in yd.keys() {
                    tick(1)?;
                    super::setorder::remove_key(&mut d, &mut model, k)?;
                }
                if let Some(m) = model.as_mut() {
                    m.after_removals();
                }
                Ok(Value::set_with(d, model))
            }
            _ => Err(unsupported("-", a, b)),
        },
        BinOp::Mod => match a {
            Value::Str(_) => Err(type_err("not all arguments converted during string formatting (str % is not available in lackpy)")),
            _ => Err(unsupported("%", a, b)),
        },
        _ => Err(unsupported(op.sym(), a, b)),
    }
}

fn num_binop(op: BinOp, x: &Num, y: &Num) -> InterpResult<Value> {
    let any_float = matches!(x, Num::F(_)) || matches!(y, Num::F(_));
    if any_float {
        let (a, b) = (as_f64(x)?, as_f64(y)?);
        return Ok(Value::new_float(match op {
            BinOp::Add => a + b,
            BinOp::Sub => a - b,
            BinOp::Mul => a * b,
            BinOp::Div => {
                if b == 0.0 {
                    return Err(Exc::py("ZeroDivisionError", "float division by zero"));
                }
                a / b
            }
            BinOp::FloorDiv => {
                if b == 0.0 {
                    return Err(Exc::py("ZeroDivisionError", "float floor division by zero"));
                }
                float_divmod(a, b).0
            }
            BinOp::Mod => {
                if b == 0.0 {
                    return Err(Exc::py("ZeroDivisionError", "float modulo"));
                }
                float_divmod(a, b).1
            }
        }));
    }
    // Both ints; at least one big, or the fast path overflowed.
    if op == BinOp::Div {
        return int_truediv(x, y);
    }
    big_cost(x, y)?;
    // A big int modulo a small positive int (`f % (i + 7)`): the magnitude's
    // remainder by one digit, read in place; the same fuel as below (the
    // divisor is one digit).
    if let (BinOp::Mod, Num::B(a), Num::I(k)) = (op, x, y) {
        if let Ok(k) = u32::try_from(*k) {
            if k > 0 {
                tick((a.bits() / 64 + 1).min(1 << 40) / 16)?;
                let r = mod_digits(a.magnitude().iter_u64_digits(), u64::from(k));
                let r = if a.is_negative() && r != 0 {
                    u64::from(k) - r
                } else {
                    r
                };
                return Ok(Value::Int(r as i64));
            }
        }
    }
    // Borrowed: the operands are not copied (a big int can be kilobytes).
    let (a, b) = (nb_ref(x), nb_ref(y));
    let (a, b): (&BigInt, &BigInt) = (&a, &b);
    let r = match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul => {
            // Preflight: the product has at most bits(a)+bits(b) bits.
            let bytes = (a.bits() + b.bits()) / 8 + 16;
            mem_check(bytes)?;
            let cost = (a.bits() / 64 + 1).saturating_mul(b.bits() / 64 + 1);
            tick(cost.min(1 << 40) / 16)?;
            a * b
        }
        BinOp::FloorDiv | BinOp::Mod => {
            if b.is_zero() {
                return Err(Exc::py(
                    "ZeroDivisionError",
                    if op == BinOp::Mod {
                        "integer modulo by zero"
                    } else {
                        "integer division or modulo by zero"
                    },
                ));
            }
            let cost = (a.bits() / 64 + 1).saturating_mul(b.bits() / 64 + 1);
            tick(cost.min(1 << 40) / 16)?;
            if op == BinOp::FloorDiv {
                a.div_floor(b)
            } else {
                a.mod_floor(b)
            }
        }
        BinOp::Div => return Err(Exc::internal("unreachable division")),
    };
    Ok(Value::from_big(r))
}

/// `n mod d` of a magnitude given by its 64-bit digits (least significant
/// first), for `d > 0` (0 for `d == 0`: the caller never passes it).
///
/// Why: num-bigint's one-digit remainder issues a 128-by-64-bit `div` per
/// digit, 88 % of `bigint_factorial`'s `f % (i + 7)` samples (tens of
/// cycles each on this EPYC). The divisor is normalised once and each step
/// is Möller and Granlund's division by an invariant integer ("Improved
/// division by invariant integers", IEEE TC 2011, algorithm 4, the
/// remainder only): one 64x64->128 multiply and a few adds per digit, with
/// the reciprocal computed once per call.
pub fn mod_digits(digits: impl DoubleEndedIterator<Item = u64>, d: u64) -> u64 {
    if d == 0 {
        return 0;
    }
    let s = d.leading_zeros();
    let dn = d << s;
    // floor((2^128 - 1) / dn) - 2^64: the quotient is in [2^64, 2^65) for a
    // normalised dn, so dropping its top bit subtracts 2^64.
    let v = (u128::MAX / u128::from(dn)) as u64;
    let mut it = digits.rev();
    if s >= 32 {
        return mod_digits_small(it, d, s, v);
    }
    let Some(mut hi) = it.next() else {
        return 0;
    };
    if s == 0 {
        // Already normalised: no shifting.
        let mut r = if hi >= dn { hi - dn } else { hi };
        for x in it {
            r = rem_2by1(r, x, dn, v);
        }
        return r;
    }
    // The remainder of n << s by dn is (n mod d) << s; n << s is walked
    // digit by digit, its top digit being the bits shifted out of `hi`.
    let mut r = hi >> (64 - s);
    for lo in it {
        r = rem_2by1(r, (hi << s) | (lo >> (64 - s)), dn, v);
        hi = lo;
    }
    rem_2by1(r, hi << s, dn, v) >> s
}

/// [`mod_digits`] for `d < 2^32` (`s`: its leading zeros, at least 32;
/// `v`: the reciprocal of `d << s`), the digits most significant first.
/// Two digits per step of the dependent chain: `r = (r * (2^128 mod d) +
/// (pair mod d)) mod d`, where `r * (2^128 mod d) + (pair mod d) < d^2 <
/// 2^64` and each pair's own remainder does not depend on `r`, so the
/// processor overlaps it with the chain (one reduction on the chain per
/// two digits instead of one per digit).
fn mod_digits_small(mut it: impl Iterator<Item = u64>, d: u64, s: u32, v: u64) -> u64 {
    let dn = d << s;
    // `(hi * 2^64 + lo) mod d`: the two digits shifted left by s, reduced
    // by dn, shifted back (hi >> (64 - s) < 2^s <= dn).
    let red = |hi: u64, lo: u64| -> u64 {
        let r1 = rem_2by1(hi >> (64 - s), (hi << s) | (lo >> (64 - s)), dn, v);
        rem_2by1(r1, lo << s, dn, v) >> s
    };
    // `t mod d` for one digit (one reduction).
    let red1 = |t: u64| -> u64 { rem_2by1(t >> (64 - s), t << s, dn, v) >> s };
    let b1 = red1(u64::MAX).wrapping_add(1) % d; // 2^64 mod d
    let c = b1 * b1 % d; // 2^128 mod d (b1 < 2^32)
    let mut r = 0u64;
    loop {
        match (it.next(), it.next()) {
            (Some(hi), Some(lo)) => r = red1(r * c + red(hi, lo)),
            (Some(x), None) => return red1(r * b1 + red1(x)),
            _ => return r,
        }
    }
}

/// `(u1 * 2^64 + u0) mod d` for a normalised `d` (top bit set), `u1 < d`,
/// and `v = floor((2^128 - 1) / d) - 2^64` (see [`mod_digits`]).
#[inline(always)]
fn rem_2by1(u1: u64, u0: u64, d: u64, v: u64) -> u64 {
    let q = (u128::from(v) * u128::from(u1)).wrapping_add((u128::from(u1) << 64) | u128::from(u0));
    let q1 = ((q >> 64) as u64).wrapping_add(1);
    let q0 = q as u64;
    let mut r = u0.wrapping_sub(q1.wrapping_mul(d));
    if r > q0 {
        r = r.wrapping_add(d);
    }
    if r >= d {
        r -= d;
    }
    r
}

/// CPython's float floor division and modulo.
pub fn float_divmod(vx: f64, wx: f64) -> (f64, f64) {
    let mut m = vx % wx;
    let mut div = (vx - m) / wx;
    if m != 0.0 {
        if (wx < 0.0) != (m < 0.0) {
            m += wx;
            div -= 1.0;
        }
    } else {
        m = 0.0f64.copysign(wx);
    }
    let floordiv = if div != 0.0 {
        let mut f = div.floor();
        if div - f > 0.5 {
            f += 1.0;
        }
        f
    } else {
        0.0f64.copysign(vx / wx)
    };
    (floordiv, m)
}

/// Correctly rounded int / int.
fn int_truediv(x: &Num, y: &Num) -> InterpResult<Value> {
    if let (Num::I(a), Num::I(b)) = (x, y) {
        if *b == 0 {
            return Err(Exc::py("ZeroDivisionError", "division by zero"));
        }
        const LIM: i64 = 1 << 53;
        if a.unsigned_abs() <= LIM as u64 && b.unsigned_abs() <= LIM as u64 {
            return Ok(Value::Float(*a as f64 / *b as f64));
        }
    }
    let (a, b) = (nb(x), nb(y));
    if b.is_zero() {
        return Err(Exc::py("ZeroDivisionError", "division by zero"));
    }
    big_cost(x, y)?;
    Ok(Value::Float(big_div_f64(&a, &b)?))
}

/// Correctly rounded quotient of two big ints as a float.
///
/// # Errors
/// OverflowError when the quotient is too large for a float.
pub fn big_div_f64(a: &BigInt, b: &BigInt) -> InterpResult<f64> {
    let neg = a.is_negative() != b.is_negative();
    let (a, b) = (a.abs(), b.abs());
    if a.is_zero() {
        return Ok(if neg { -0.0 } else { 0.0 });
    }
    // Scale so the quotient has 55..=56 significant bits, keep a sticky bit.
    let shift: i64 = 55 - (a.bits() as i64 - b.bits() as i64);
    let (n, d) = if shift >= 0 {
        (a << (shift as usize), b)
    } else {
        (a, b << ((-shift) as usize))
    };
    let (q, r) = n.div_rem(&d);
    let mut q = q.to_u64().unwrap_or(u64::MAX);
    if !r.is_zero() {
        q |= 1;
    }
    // q has 55 or 56 bits; value = q * 2^-shift.
    let qbits = 64 - q.leading_zeros() as i64;
    let mut exp = qbits - 1 - shift; // exponent of the leading bit
    if exp < -1022 {
        // Subnormal result: value = m * 2^-1074, m < 2^52 (a carry to 2^52
        // is exactly the smallest normal, which the same bits encode).
        let drop = -1074 - (exp - (qbits - 1)); // bits of q below 2^-1074
        let m = if drop >= 64 {
            // Far below the smallest subnormal: rounds to 0 unless above half of it.
            0
        } else if drop <= 0 {
            q << (-drop)
        } else {
            let m = q >> drop;
            let rem = q & ((1u64 << drop) - 1);
            let half = 1u64 << (drop - 1);
            if rem > half || (rem == half && (m & 1) == 1) {
                m + 1
            } else {
                m
            }
        };
        let f = f64::from_bits(m);
        return Ok(if neg { -f } else { f });
    }
    let drop = qbits - 53;
    let mut m = q >> drop;
    let rem = q & ((1u64 << drop) - 1);
    let half = 1u64 << (drop - 1);
    if rem > half || (rem == half && (m & 1) == 1) {
        m += 1;
        if m >> 53 != 0 {
            m >>= 1;
            exp += 1;
        }
    }
    if exp > 1023 {
        return Err(Exc::py(
            "OverflowError",
            "integer division result too large for a float",
        ));
    }
    let bits = (((exp + 1023) as u64) << 52) | (m & ((1u64 << 52) - 1));
    let f = f64::from_bits(bits);
    Ok(if neg { -f } else { f })
}

fn add_seq(a: &Value, b: &Value) -> InterpResult<Value> {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => {
            mem_check((x.len() + y.len()) as u64)?;
            tick(1 + (x.len() + y.len()) as u64 / 256)?;
            Ok(super::value::PyStr::concat(x, y))
        }
        (Value::List(x), Value::List(y)) => {
            let (x, y) = (x.v.borrow(), y.v.borrow());
            mem_check_n((x.len() + y.len()) as u64, SLOT as u64)?;
            tick(1 + (x.len() + y.len()) as u64 / 16)?;
            let mut v = Vec::with_capacity(x.len() + y.len());
            v.extend(x.iter().cloned());
            v.extend(y.iter().cloned());
            Ok(Value::list(v))
        }
        (Value::Tuple(x), Value::Tuple(y)) => {
            mem_check_n((x.v.len() + y.v.len()) as u64, SLOT as u64)?;
            tick(1 + (x.v.len() + y.v.len()) as u64 / 16)?;
            let mut v = Vec::with_capacity(x.v.len() + y.v.len());
            v.extend(x.v.iter().cloned());
            v.extend(y.v.iter().cloned());
            Ok(Value::tuple(v))
        }
        (Value::Str(_), _) => Err(type_err(format!(
            "can only concatenate str (not \"{}\") to str",
            b.type_name()
        ))),
        (Value::List(_), _) => Err(type_err(format!(
            "can only concatenate list (not \"{}\") to list",
            b.type_name()
        ))),
        (Value::Tuple(_), _) => Err(type_err(format!(
            "can only concatenate tuple (not \"{}\") to tuple",
            b.type_name()
        ))),
        _ => Err(unsupported("+", a, b)),
    }
}

/// Repeat count of `seq * n` (negative → 0).
///
/// # Errors
/// OverflowError for a huge big int.
pub fn repeat_count(v: &Value) -> InterpResult<Option<usize>> {
    Ok(match v {
        Value::Int(i) => Some((*i).max(0) as usize),
        Value::Bool(b) => Some(*b as usize),
        // Beyond the index range either way, as CPython (`[0] * -10**20`
        // is an OverflowError too, not `[]`).
        Value::Big(_) => {
            return Err(Exc::py(
                "OverflowError",
                "cannot fit 'int' into an index-sized integer",
            ));
        }
        _ => None,
    })
}

fn mul_seq(a: &Value, b: &Value) -> InterpResult<Value> {
    let (seq, n) = match (a, b) {
        (Value::Str(_) | Value::List(_) | Value::Tuple(_), _) => (a, b),
        (_, Value::Str(_) | Value::List(_) | Value::Tuple(_)) => (b, a),
        _ => return Err(unsupported("*", a, b)),
    };
    let Some(n) = repeat_count(n)? else {
        return Err(type_err(format!(
            "can't multiply sequence by non-int of type '{}'",
            n.type_name()
        )));
    };
    match seq {
        Value::Str(s) => {
            // CPython's own bound, checked before any allocation.
            if n > 0 && s.nchars > isize::MAX as usize / n {
                return Err(Exc::py("OverflowError", "repeated string is too long"));
            }
            let total = (s.len() as u64).saturating_mul(n as u64);
            mem_check(total)?;
            tick(1 + total / 256)?;
            Ok(Value::str(s.as_str().repeat(n)))
        }
        Value::List(l) => {
            let l = l.v.borrow();
            if l.is_empty() {
                return Ok(Value::list(Vec::new()));
            }
            let total = (l.len() as u64).saturating_mul(n as u64);
            mem_check_n(total, SLOT as u64)?;
            tick(1 + total / 16)?;
            let mut v = Vec::with_capacity(total as usize);
            for _ in 0..n {
                v.extend(l.iter().cloned());
            }
            Ok(Value::list(v))
        }
        Value::Tuple(t) => {
            if t.v.is_empty() {
                return Ok(Value::tuple(Vec::new()));
            }
            let total = (t.v.len() as u64).saturating_mul(n as u64);
            mem_check_n(total, SLOT as u64)?;
            tick(1 + total / 16)?;
            let mut v = Vec::with_capacity(total as usize);
            for _ in 0..n {
                v.extend(t.v.iter().cloned());
            }
            Ok(Value::tuple(v))
        }
        _ => Err(unsupported("*", a, b)),
    }
}

/// Unary minus.
///
/// # Errors
/// TypeError for non-numbers.
pub fn neg(v: &Value) -> InterpResult<Value> {
    Ok(match v {
        Value::Int(i) => match i.checked_neg() {
            Some(r) => Value::Int(r),
            None => Value::from_big(-BigInt::from(*i)),
        },
        Value::Bool(b) => Value::Int(-(*b as i64)),
        Value::Big(b) => Value::from_big(-(**b).clone()),
        Value::Float(f) => Value::new_float(-f),
        _ => {
            return Err(type_err(format!(
                "bad operand type for unary -: '{}'",
                v.type_name()
            )))
        }
    })
}

/// Unary plus.
///
/// # Errors
/// TypeError for non-numbers.
pub fn pos(v: &Value) -> InterpResult<Value> {
    Ok(match v {
        Value::Int(_) | Value::Big(_) | Value::Float(_) => v.clone(),
        Value::Bool(b) => Value::Int(*b as i64),
        _ => {
            return Err(type_err(format!(
                "bad operand type for unary +: '{}'",
                v.type_name()
            )))
        }
    })
}

/// Compare an int with a float exactly.
fn cmp_int_float(i: &Num, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    if f.is_infinite() {
        return Some(if f > 0.0 {
            Ordering::Less
        } else {
            Ordering::Greater
        });
    }
    if let Num::I(i) = i {
        if i.unsigned_abs() <= (1u64 << 53) {
            return (*i as f64).partial_cmp(&f);
        }
    }
    let bi = nb(i);
    let t = float_to_big(f)?;
    match bi.cmp(&t) {
        Ordering::Equal => {
            let frac = f - f.trunc();
            Some(if frac > 0.0 {
                Ordering::Less
            } else if frac < 0.0 {
                Ordering::Greater
            } else {
                Ordering::Equal
            })
        }
        o => Some(o),
    }
}

/// Compare two numbers (None when unordered, i.e. NaN).
pub fn num_cmp(a: &Num, b: &Num) -> Option<Ordering> {
    match (a, b) {
        (Num::I(x), Num::I(y)) => Some(x.cmp(y)),
        (Num::F(x), Num::F(y)) => x.partial_cmp(y),
        (Num::F(x), _) => cmp_int_float(b, *x).map(Ordering::reverse),
        (_, Num::F(y)) => cmp_int_float(a, *y),
        _ => Some(nb(a).cmp(&nb(b))),
    }
}

fn rec_err(what: &str) -> Box<Exc> {
    Exc::py(
        "RecursionError",
        format!("maximum recursion depth exceeded {what}"),
    )
}

/// `a == b`.
///
/// # Errors
/// RecursionError on absurdly deep values.
pub fn eq(a: &Value, b: &Value) -> InterpResult<bool> {
    eq_rec(a, b, 0)
}

fn eq_rec(a: &Value, b: &Value, depth: usize) -> InterpResult<bool> {
    if depth > MAX_REC {
        return Err(rec_err("in comparison"));
    }
    super::budget::stack_check(" in comparison")?;
    Ok(match (a, b) {
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => Rc::ptr_eq(x, y) || x.same_text(y),
        (Value::None, Value::None) => true,
        (Value::List(x), Value::List(y)) => {
            if Rc::ptr_eq(x, y) {
                return Ok(true);
            }
            let (x, y) = (x.v.borrow(), y.v.borrow());
            seq_eq(&x, &y, depth)?
        }
        (Value::Tuple(x), Value::Tuple(y)) => Rc::ptr_eq(x, y) || seq_eq(&x.v, &y.v, depth)?,
        (Value::Dict(x), Value::Dict(y)) => {
            if Rc::ptr_eq(x, y) {
                return Ok(true);
            }
            let (x, y) = (x.d.borrow(), y.d.borrow());
            if x.len() != y.len() {
                return Ok(false);
            }
            for (k, v) in x.iter() {
                tick(1)?;
                match y.get(k)? {
                    Some(w) => {
                        if !(v.is(w) || eq_rec(v, w, depth + 1)?) {
                            return Ok(false);
                        }
                    }
                    None => return Ok(false),
                }
            }
            true
        }
        (Value::Range(x), Value::Range(y)) => {
            let (lx, ly) = (x.len128(), y.len128());
            lx == ly && (lx == 0 || (x.start == y.start && (lx == 1 || x.step == y.step)))
        }
        _ if is_setlike(a) || is_setlike(b) => match setlike_cmp(None, a, b)? {
            Some(r) => r,
            None => a.is(b),
        },
        _ => match (super::ops::num(a), super::ops::num(b)) {
            (Some(x), Some(y)) => num_cmp(&x, &y) == Some(Ordering::Equal),
            _ => a.is(b),
        },
    })
}

/// The set `x - y`, in `x`'s order.
///
/// # Errors
/// Fuel, memory.
fn set_difference(x: &Dict, y: &Dict) -> InterpResult<Value> {
    let mut d = Dict::new();
    for k in x.keys() {
        tick(1)?;
        if !y.contains(k)? {
            d.insert(k.clone(), Value::None)?;
        }
    }
    Ok(Value::set(d))
}

/// Is every key of `x` in `y`?
///
/// # Errors
/// Fuel.
pub fn subset(x: &Dict, y: &Dict) -> InterpResult<bool> {
    for k in x.keys() {
        tick(1)?;
        if !y.contains(k)? {
            return Ok(false);
        }
    }
    Ok(true)
}

fn seq_eq(x: &[Value], y: &[Value], depth: usize) -> InterpResult<bool> {
    if x.len() != y.len() {
        return Ok(false);
    }
    tick(1 + x.len() as u64 / 8)?;
    for (a, b) in x.iter().zip(y.iter()) {
        if let (Value::Int(p), Value::Int(q)) = (a, b) {
            if p != q {
                return Ok(false);
            }
            continue;
        }
        if !(a.is(b) || eq_rec(a, b, depth + 1)?) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Comparison operators that order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl OrderOp {
    fn sym(self) -> &'static str {
        match self {
            OrderOp::Lt => "<",
            OrderOp::Le => "<=",
            OrderOp::Gt => ">",
            OrderOp::Ge => ">=",
        }
    }
    fn test(self, o: Ordering) -> bool {
        match self {
            OrderOp::Lt => o == Ordering::Less,
            OrderOp::Le => o != Ordering::Greater,
            OrderOp::Gt => o == Ordering::Greater,
            OrderOp::Ge => o != Ordering::Less,
        }
    }
}

/// `a < b` and friends.
///
/// # Errors
/// `TypeError: '<' not supported between instances of 'int' and 'str'`.
pub fn compare(op: OrderOp, a: &Value, b: &Value) -> InterpResult<bool> {
    cmp_rec(op, a, b, 0)
}

fn cmp_rec(op: OrderOp, a: &Value, b: &Value, depth: usize) -> InterpResult<bool> {
    if depth > MAX_REC {
        return Err(rec_err("in comparison"));
    }
    super::budget::stack_check(" in comparison")?;
    if let (Value::Int(x), Value::Int(y)) = (a, b) {
        return Ok(op.test(x.cmp(y)));
    }
    if let (Some(x), Some(y)) = (num(a), num(b)) {
        return Ok(match num_cmp(&x, &y) {
            Some(o) => op.test(o),
            None => false,
        });
    }
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => {
            Ok(op.test(super::surrogate::cmp_str(x.as_bytes(), y.as_bytes())))
        }
        (Value::List(x), Value::List(y)) => {
            let (x, y) = (x.v.borrow(), y.v.borrow());
            seq_cmp(op, &x, &y, depth)
        }
        (Value::Tuple(x), Value::Tuple(y)) => seq_cmp(op, &x.v, &y.v, depth),
        _ => {
            if is_setlike(a) || is_setlike(b) {
                if let Some(r) = setlike_cmp(Some(op), a, b)? {
                    return Ok(r);
                }
            }
            Err(type_err(format!(
                "'{}' not supported between instances of '{}' and '{}'",
                op.sym(),
                a.type_name(),
                b.type_name()
            )))
        }
    }
}

/// Is `v` set-like: a set, or a keys or items view (values views are not)?
/// Sets and such views compare with each other through [`setlike_cmp`].
fn is_setlike(v: &Value) -> bool {
    matches!(v, Value::Set(_) | Value::Keys(_) | Value::Items(_))
}

/// The table behind a set-like operand (a set, a keys view or an items
/// view) and whether its elements are the `(key, value)` items.
fn setlike(v: &Value) -> Option<(std::cell::Ref<'_, Dict>, bool)> {
    match v {
        Value::Set(s) => Some((s.d.borrow(), false)),
        Value::Keys(d) => Some((d.d.borrow(), false)),
        Value::Items(d) => Some((d.d.borrow(), true)),
        _ => None,
    }
}

/// `item in` a set-like operand, as CPython's set and dict-view `in`.
fn setlike_contains(t: &Dict, items: bool, item: &Value) -> InterpResult<bool> {
    if !items {
        return t.contains(item);
    }
    let Value::Tuple(kv) = item else {
        return Ok(false);
    };
    let [k, v] = kv.v.as_slice() else {
        return Ok(false);
    };
    Ok(match t.get(k)? {
        Some(w) => w.is(v) || eq(w, v)?,
        None => false,
    })
}

/// CPython's `all_contained_in(x, y)`.
fn all_contained_in(x: (&Dict, bool), y: (&Dict, bool)) -> InterpResult<bool> {
    for (k, v) in x.0.iter() {
        tick(1)?;
        let found = if x.1 {
            setlike_contains(y.0, y.1, &Value::tuple(vec![k.clone(), v.clone()]))?
        } else {
            setlike_contains(y.0, y.1, k)?
        };
        if !found {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `==` (`op` None) or an ordering between two set-like operands (sets,
/// dict keys/items views: `set_richcompare`, `dictview_richcompare`);
/// `None` when either is not set-like (CPython's NotImplemented).
fn setlike_cmp(op: Option<OrderOp>, a: &Value, b: &Value) -> InterpResult<Option<bool>> {
    let (Some(x), Some(y)) = (setlike(a), setlike(b)) else {
        return Ok(None);
    };
    let (lx, ly) = (x.0.len(), y.0.len());
    let (x, y) = ((&*x.0, x.1), (&*y.0, y.1));
    Ok(Some(match op {
        None => lx == ly && all_contained_in(x, y)?,
        Some(OrderOp::Lt) => lx < ly && all_contained_in(x, y)?,
        Some(OrderOp::Le) => lx <= ly && all_contained_in(x, y)?,
        Some(OrderOp::Gt) => lx > ly && all_contained_in(y, x)?,
        Some(OrderOp::Ge) => lx >= ly && all_contained_in(y, x)?,
    }))
}

fn seq_cmp(op: OrderOp, x: &[Value], y: &[Value], depth: usize) -> InterpResult<bool> {
    tick(1 + x.len().min(y.len()) as u64 / 8)?;
    for (a, b) in x.iter().zip(y.iter()) {
        match (a, b) {
            (Value::Int(p), Value::Int(q)) => {
                if p != q {
                    return Ok(op.test(p.cmp(q)));
                }
                continue;
            }
            (Value::Str(p), Value::Str(q)) => {
                if p.as_bytes() != q.as_bytes() {
                    return Ok(op.test(super::surrogate::cmp_str(p.as_bytes(), q.as_bytes())));
                }
                continue;
            }
            _ => {}
        }
        if !(a.is(b) || eq_rec(a, b, depth + 1)?) {
            return cmp_rec(op, a, b, depth + 1);
        }
    }
    Ok(op.test(x.len().cmp(&y.len())))
}

/// Total order used by `sorted`/`min`/`max`: `a < b`.
///
/// # Errors
/// TypeError for unorderable values.
#[inline]
pub fn lt(a: &Value, b: &Value) -> InterpResult<bool> {
    compare(OrderOp::Lt, a, b)
}

#[cfg(test)]
mod mod_digits_tests {
    use super::mod_digits;
    use num_bigint::BigUint;

    /// The invariant-divisor remainder equals num-bigint's for numbers of
    /// 0 to 40 digits (random, all-ones, powers of two) and divisors from
    /// 1 to u64::MAX (small, around powers of two, random).
    #[test]
    fn mod_digits_matches_num_bigint() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut divisors = vec![
            1u64,
            2,
            3,
            7,
            10,
            97,
            1 << 31,
            u64::from(u32::MAX),
            1 << 32,
            (1 << 32) + 1,
        ];
        divisors.extend([
            (1 << 63) - 1,
            1 << 63,
            (1 << 63) + 1,
            u64::MAX - 1,
            u64::MAX,
        ]);
        for _ in 0..40 {
            let k = next();
            divisors.push((k >> (k % 64)).max(1));
        }
        let mut numbers: Vec<Vec<u64>> = vec![vec![], vec![0], vec![u64::MAX; 3], vec![0, 0, 1]];
        for n in 1..=40 {
            numbers.push((0..n).map(|_| next()).collect());
            numbers.push(vec![u64::MAX; n]);
        }
        for digits in &numbers {
            let mut le = Vec::new();
            for d in digits {
                le.extend_from_slice(&d.to_le_bytes());
            }
            let big = BigUint::from_bytes_le(&le);
            for &d in &divisors {
                let want = u64::try_from(&big % d).unwrap_or(u64::MAX);
                assert_eq!(mod_digits(digits.iter().copied(), d), want, "{big} % {d}");
            }
        }
    }
}
