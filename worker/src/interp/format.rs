//! Text rendering with CPython's exact rules: float `repr`, string `repr`
//! (quote choice and escapes), and the format-spec mini-language used by
//! f-strings.

use num_bigint::BigInt;
use num_traits::Signed;

use super::err::{type_err, value_err, Exc, InterpResult};
use super::ops::big_to_f64;
use super::value::Value;

/// Split Rust's shortest `{:e}` rendering into (digits, decimal exponent).
fn shortest_digits(f: f64) -> (String, i32) {
    let a = f.abs();
    let s = format!("{a:e}");
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let mut digits: String = mant.chars().filter(|c| *c != '.').collect();
    let mut exp: i32 = exp.parse().unwrap_or(0);
    // When the value lies exactly halfway between two shortest candidates,
    // CPython (dtoa mode 0) picks the one with the even last digit; Rust may
    // pick the other. Ties need the exact expansion to be one digit longer
    // than the shortest and to end in 5.
    let k = digits.len();
    if k >= 15 {
        let probe = format!("{:.*e}", k + 2, a);
        let pd: String = probe
            .split('e')
            .next()
            .unwrap_or("")
            .chars()
            .filter(|c| *c != '.')
            .collect();
        if pd.len() == k + 3 && pd.as_bytes().get(k) == Some(&b'5') && &pd[k + 1..] == "00" {
            let exact = format!("{:.*e}", 800, a);
            let (em, ee) = exact.split_once('e').unwrap_or((&exact, "0"));
            let ed: String = em.chars().filter(|c| *c != '.').collect();
            let ed = ed.trim_end_matches('0');
            if ed.len() == k + 1 && ed.ends_with('5') {
                let lower = &ed[..k];
                let last = lower.as_bytes()[k - 1] - b'0';
                if last.is_multiple_of(2) {
                    digits = lower.to_string();
                    exp = ee.parse().unwrap_or(exp);
                } else {
                    // Round the prefix up (with carry).
                    let mut b: Vec<u8> = lower.bytes().collect();
                    let mut i = b.len();
                    let mut e2: i32 = ee.parse().unwrap_or(exp);
                    loop {
                        if i == 0 {
                            b.insert(0, b'1');
                            b.pop();
                            e2 += 1;
                            break;
                        }
                        i -= 1;
                        if b[i] == b'9' {
                            b[i] = b'0';
                        } else {
                            b[i] += 1;
                            break;
                        }
                    }
                    let up = String::from_utf8(b).unwrap_or_default();
                    digits = up.trim_end_matches('0').to_string();
                    if digits.is_empty() {
                        digits = "0".into();
                    }
                    exp = e2;
                }
                // Keep the result shortest (drop trailing zeros).
                let t = digits.trim_end_matches('0');
                if !t.is_empty() {
                    digits = t.to_string();
                }
            }
        }
    }
    (digits, exp)
}

/// CPython's `repr(float)`: shortest round-trip digits; scientific notation
/// when the exponent is < -4 or >= 16.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if f == 0.0 {
        return format!("{sign}0.0");
    }
    let (digits, exp) = shortest_digits(f);
    let mut out = String::from(sign);
    if (-4..16).contains(&exp) {
        if exp < 0 {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.push_str(&digits);
        } else {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                for _ in digits.len()..int_len {
                    out.push('0');
                }
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        push_exp(&mut out, exp, 'e');
    }
    out
}

fn push_exp(out: &mut String, exp: i32, e: char) {
    out.push(e);
    out.push(if exp < 0 { '-' } else { '+' });
    let a = exp.unsigned_abs();
    if a < 10 {
        out.push('0');
    }
    out.push_str(&a.to_string());
}

/// Is `c` printable in CPython's sense (approximated without full tables)?
pub fn is_printable(c: char) -> bool {
    super::unicode::has(c, super::unicode::PRINT)
}

/// CPython's `repr(str)` (or `ascii(str)` when `ascii` is set).
pub fn str_repr_into(s: &str, out: &mut String, ascii: bool) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    // Printable ASCII without a backslash or the quote is its own repr.
    if s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'\\' && b != quote as u8)
    {
        out.push_str(s);
        out.push(quote);
        return;
    }
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x7f && (c as u32) >= 0x20 => out.push(c),
            c if !ascii && is_printable(c) => out.push(c),
            c => {
                let u = super::surrogate::code_point(c);
                if u < 0x100 {
                    out.push_str(&format!("\\x{u:02x}"));
                } else if u < 0x10000 {
                    out.push_str(&format!("\\u{u:04x}"));
                } else {
                    out.push_str(&format!("\\U{u:08x}"));
                }
            }
        }
    }
    out.push(quote);
}

/// An upper bound of the bytes [`str_repr_into`] appends for `s` (every
/// quote counted as escaped), without building it: what a repr is
/// preflighted with against the memory budget.
/// Counting stops once past `cap` (the answer is then some length above it).
pub fn str_repr_len(s: &str, ascii: bool, cap: usize) -> usize {
    let mut n = 2usize;
    for c in s.chars() {
        if n > cap {
            break;
        }
        n = n.saturating_add(match c {
            '\\' | '\n' | '\r' | '\t' | '\'' | '"' => 2,
            c if (c as u32) < 0x7f && (c as u32) >= 0x20 => 1,
            c if !ascii && is_printable(c) => c.len_utf8(),
            c if (c as u32) < 0x100 => 4,
            c if (c as u32) < 0x10000 => 6,
            _ => 10,
        });
    }
    n
}

/// `repr(str)`.
pub fn str_repr(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    str_repr_into(s, &mut o, false);
    o
}

/// A parsed format spec.
#[derive(Debug, Default, Clone)]
pub struct Spec {
    fill: Option<char>,
    align: Option<char>,
    sign: Option<char>,
    z: bool,
    alt: bool,
    zero: bool,
    width: usize,
    grouping: Option<char>,
    precision: Option<usize>,
    ty: Option<char>,
}

/// Largest width or precision accepted: CPython raises "Too many decimal
/// digits in format string" beyond ssize_t. What they allocate is
/// preflighted against the memory budget where it is allocated (the
/// padding here, a float's digits in [`format_float_spec`]).
const MAX_WIDTH: usize = isize::MAX as usize;

/// Parse a format spec.
///
/// # Errors
/// ValueError for malformed specs.
pub fn parse_spec(spec: &str, tyname: &str) -> InterpResult<Spec> {
    let mut sp = Spec::default();
    if spec.is_empty() {
        return Ok(sp);
    }
    let mut it = spec.chars().peekable();
    let is_align = |c: char| matches!(c, '<' | '>' | '^' | '=');
    // [[fill]align]
    let mut first_two = spec.chars();
    let c0 = first_two.next();
    let c1 = first_two.next();
    match (c0, c1) {
        (Some(f), Some(a)) if is_align(a) => {
            sp.fill = Some(f);
            sp.align = Some(a);
            it.next();
            it.next();
        }
        (Some(a), _) if is_align(a) => {
            sp.align = Some(a);
            it.next();
        }
        _ => {}
    }
    if let Some(c @ ('+' | '-' | ' ')) = it.peek().copied() {
        sp.sign = Some(c);
        it.next();
    }
    if it.peek() == Some(&'z') {
        sp.z = true;
        it.next();
    }
    if it.peek() == Some(&'#') {
        sp.alt = true;
        it.next();
    }
    if it.peek() == Some(&'0') {
        sp.zero = true;
        it.next();
    }
    let num = |it: &mut std::iter::Peekable<std::str::Chars>| -> InterpResult<Option<usize>> {
        let mut v: Option<usize> = None;
        while let Some(d) = it.peek().and_then(|c| c.to_digit(10)) {
            it.next();
            let n = v.unwrap_or(0).saturating_mul(10).saturating_add(d as usize);
            if n > MAX_WIDTH {
                return Err(value_err("Too many decimal digits in format string"));
            }
            v = Some(n);
        }
        Ok(v)
    };
    if let Some(w) = num(&mut it)? {
        sp.width = w;
    }
    if let Some(c @ (',' | '_')) = it.peek().copied() {
        sp.grouping = Some(c);
        it.next();
        // A second, different separator is an error here; the same one
        // again is read as the type (`,,` -> "Cannot specify ',' with ','.").
        if matches!(it.peek(), Some(',' | '_')) && it.peek() != Some(&c) {
            return Err(value_err("Cannot specify both ',' and '_'."));
        }
    }
    if it.peek() == Some(&'.') {
        it.next();
        match num(&mut it)? {
            Some(p) => sp.precision = Some(p),
            None => return Err(value_err("Format specifier missing precision")),
        }
    }
    if let Some(t) = it.next() {
        if it.next().is_some() {
            return Err(value_err(format!(
                "Invalid format specifier '{spec}' for object of type '{tyname}'"
            )));
        }
        sp.ty = Some(t);
    }
    if let Some(g) = sp.grouping {
        // Strings parse with default type 's' (CPython's format_obj).
        let eff = sp.ty.or(if tyname == "str" { Some('s') } else { None });
        let ok = match eff {
            None | Some('d' | 'e' | 'f' | 'g' | 'E' | 'G' | '%' | 'F') => true,
            Some('b' | 'o' | 'x' | 'X') => g == '_',
            _ => false,
        };
        if !ok {
            let t = eff.unwrap_or(' ');
            let shown = if (33..128).contains(&(t as u32)) {
                t.to_string()
            } else {
                format!("\\x{:x}", t as u32)
            };
            return Err(value_err(format!("Cannot specify '{g}' with '{shown}'.")));
        }
    }
    if sp.zero && sp.fill.is_none() {
        sp.fill = Some('0');
        if sp.align.is_none() {
            sp.align = Some('=');
        }
    }
    // The width sizes the padding: preflight it against the memory budget.
    // (A precision only truncates a str, is refused for an int, and sizes a
    // float's digits: checked there, after CPython's own errors.)
    super::budget::mem_check((sp.width as u64).saturating_mul(4))?;
    Ok(sp)
}

fn unknown(c: char, tyname: &str) -> Box<Exc> {
    // CPython prints the code itself only for 33..=127, else `\x<hex>`.
    let code = if (33..128).contains(&(c as u32)) {
        c.to_string()
    } else {
        format!("\\x{:x}", c as u32)
    };
    value_err(format!(
        "Unknown format code '{code}' for object of type '{tyname}'"
    ))
}

fn pad(body: &str, sign_prefix: &str, sp: &Spec, default_align: char) -> String {
    let len = if body.is_ascii() {
        body.len()
    } else {
        body.chars().count()
    } + sign_prefix.chars().count();
    let mut out =
        String::with_capacity(body.len() + sign_prefix.len() + sp.width.saturating_sub(len) * 4);
    if len >= sp.width {
        out.push_str(sign_prefix);
        out.push_str(body);
        return out;
    }
    let fill = sp.fill.unwrap_or(' ');
    let align = sp.align.unwrap_or(default_align);
    let n = sp.width - len;
    let fills = |out: &mut String, k: usize| {
        for _ in 0..k {
            out.push(fill);
        }
    };
    match align {
        '<' => {
            out.push_str(sign_prefix);
            out.push_str(body);
            fills(&mut out, n);
        }
        '^' => {
            fills(&mut out, n / 2);
            out.push_str(sign_prefix);
            out.push_str(body);
            fills(&mut out, n - n / 2);
        }
        '=' => {
            out.push_str(sign_prefix);
            fills(&mut out, n);
            out.push_str(body);
        }
        _ => {
            fills(&mut out, n);
            out.push_str(sign_prefix);
            out.push_str(body);
        }
    }
    out
}

/// Insert grouping separators into a run of digits, every `every` digits.
/// When `min_len` is set (zero padding), pad with grouped zeros to at least it.
fn group(digits: &str, sep: char, every: usize, min_len: usize) -> String {
    let mut ds: Vec<char> = digits.chars().collect();
    // Zero padding: the smallest digit count whose grouped text reaches min_len.
    let grouped = |n: usize| n + n.saturating_sub(1) / every;
    if grouped(ds.len()) < min_len {
        let mut n = min_len * every / (every + 1);
        while grouped(n) < min_len {
            n += 1;
        }
        let mut padded = vec!['0'; n - ds.len()];
        padded.extend(ds);
        ds = padded;
    }
    let n = ds.len();
    let mut out = String::with_capacity(n + n / every);
    for (i, c) in ds.iter().enumerate() {
        if i > 0 && (n - i).is_multiple_of(every) {
            out.push(sep);
        }
        out.push(*c);
    }
    // A leading separator can appear when padding overshoots; CPython pads
    // with a zero instead.
    if out.starts_with(sep) {
        out.insert(0, '0');
    }
    out
}

fn sign_str(neg: bool, sp: &Spec) -> &'static str {
    if neg {
        "-"
    } else {
        match sp.sign {
            Some('+') => "+",
            Some(' ') => " ",
            _ => "",
        }
    }
}

/// Assemble a number: sign, prefix, digits (grouped) and the rest, padded.
fn finish_number(
    neg: bool,
    prefix: &str,
    intpart: &str,
    rest: &str,
    sp: &Spec,
    every: usize,
) -> String {
    let sign = sign_str(neg, sp);
    let zero_group = sp.grouping.is_some() && sp.align == Some('=') && sp.fill == Some('0');
    let int_text = match sp.grouping {
        Some(g) => {
            let min = if zero_group {
                sp.width
                    .saturating_sub(sign.len() + prefix.len() + rest.chars().count())
            } else {
                0
            };
            group(intpart, g, every, min)
        }
        None => intpart.to_string(),
    };
    if sp.width == 0 {
        let mut out =
            String::with_capacity(sign.len() + prefix.len() + int_text.len() + rest.len());
        out.push_str(sign);
        out.push_str(prefix);
        out.push_str(&int_text);
        out.push_str(rest);
        return out;
    }
    let head = format!("{sign}{prefix}");
    pad(&format!("{int_text}{rest}"), &head, sp, '>')
}

/// An int to format: small or big.
#[derive(Debug, Clone, Copy)]
pub enum IntRef<'a> {
    /// Fits i64.
    Small(i64),
    /// Big.
    Big(&'a BigInt),
}

/// Format an int (small or big) under a spec.
///
/// The character `format(u, 'c')` makes of a code point below 0x110000. A
/// lone surrogate is held as its placeholder in surrogate mode (see
/// `surrogate.rs`), where a real placeholder code point is refused as a
/// tool result holding one is; without surrogate mode a surrogate cannot be
/// held at all (DIFFERENCES.md).
fn format_c_char(u: u32) -> InterpResult<char> {
    use lackpy_policy::lang::surrogate::{placeholder_of, PLACEHOLDER_BASE};
    let mode = super::surrogate::on();
    if let Some(p) = placeholder_of(u) {
        if mode {
            return Ok(p);
        }
        return Err(value_err(format!(
            "%c arg U+{u:04X} is a lone surrogate, which a lackpy program can hold only \
             when one of its string literals has a surrogate escape ('\\ud800')"
        )));
    }
    if mode && u >= PLACEHOLDER_BASE {
        return Err(value_err(format!(
            "%c arg U+{u:X} is a private-use character that lackpy cannot hold in a \
             program with surrogate escapes"
        )));
    }
    char::from_u32(u).ok_or_else(|| Exc::py("OverflowError", "%c arg not in range(0x110000)"))
}

/// # Errors
/// ValueError/OverflowError as CPython.
pub fn format_int(v: IntRef, spec: &str, tyname: &str) -> InterpResult<String> {
    let sp = parse_spec(spec, tyname)?;
    let ty = sp.ty.unwrap_or('d');
    match ty {
        'e' | 'E' | 'f' | 'F' | 'g' | 'G' | '%' => {
            let f = match v {
                IntRef::Small(i) => i as f64,
                IntRef::Big(b) => big_to_f64(b)?,
            };
            return format_float_spec(f, &sp);
        }
        'd' | 'n' | 'b' | 'o' | 'x' | 'X' | 'c' => {}
        c => return Err(unknown(c, tyname)),
    }
    if let Some(g) = sp.grouping {
        let ok = match ty {
            'd' => true,
            'b' | 'o' | 'x' | 'X' => g == '_',
            _ => false,
        };
        if !ok {
            return Err(value_err(format!("Cannot specify '{g}' with '{ty}'.")));
        }
    }
    let c = ty == 'c';
    for (refused, msg) in [
        (
            sp.precision.is_some(),
            "Precision not allowed in integer format specifier",
        ),
        (
            sp.z,
            "Negative zero coercion (z) not allowed in integer format specifier",
        ),
        (
            c && sp.sign.is_some(),
            "Sign not allowed with integer format specifier 'c'",
        ),
        (
            c && sp.alt,
            "Alternate form (#) not allowed with integer format specifier 'c'",
        ),
    ] {
        if refused {
            return Err(value_err(msg));
        }
    }
    if c {
        let code = match v {
            IntRef::Small(i) => u32::try_from(i).ok(),
            IntRef::Big(_) => {
                return Err(Exc::py(
                    "OverflowError",
                    "Python int too large to convert to C long",
                ))
            }
        };
        let Some(u) = code.filter(|u| *u < 0x110000) else {
            return Err(Exc::py("OverflowError", "%c arg not in range(0x110000)"));
        };
        let c = format_c_char(u)?;
        return Ok(pad(c.encode_utf8(&mut [0; 4]), "", &sp, '>'));
    }
    let (neg, digits) = match v {
        IntRef::Small(i) => {
            let m = i.unsigned_abs();
            (
                i < 0,
                match ty {
                    'b' => format!("{m:b}"),
                    'o' => format!("{m:o}"),
                    'x' => format!("{m:x}"),
                    'X' => format!("{m:X}"),
                    _ => m.to_string(),
                },
            )
        }
        IntRef::Big(b) => {
            let mag = b.abs();
            if matches!(ty, 'd' | 'n')
                && (b.bits() > 14_300 || (b.bits() > 14_200 && mag.to_string().len() > 4300))
            {
                return Err(value_err(
                    "Exceeds the limit (4300 digits) for integer string conversion; use sys.set_int_max_str_digits() to increase the limit",
                ));
            }
            (
                b.is_negative(),
                match ty {
                    'b' => mag.to_str_radix(2),
                    'o' => mag.to_str_radix(8),
                    'x' => mag.to_str_radix(16),
                    'X' => mag.to_str_radix(16).to_uppercase(),
                    _ => mag.to_string(),
                },
            )
        }
    };
    let (prefix, every) = match ty {
        'b' => ("0b", 4),
        'o' => ("0o", 4),
        'x' => ("0x", 4),
        'X' => ("0X", 4),
        _ => ("", 3),
    };
    let prefix = if sp.alt { prefix } else { "" };
    Ok(finish_number(neg, prefix, &digits, "", &sp, every))
}

fn strip_zeros(s: &str) -> String {
    if let Some(p) = s.find('.') {
        let t = s.trim_end_matches('0');
        if t.len() == p + 1 {
            return t[..p].to_string();
        }
        let _ = p;
        return t.to_string();
    }
    s.to_string()
}

/// Precision past which an f64's decimal expansion is all zeros: a double
/// has at most 1074 fractional binary digits, hence at most 1074 decimal
/// ones, and at most 767 significant decimal digits. Rust's formatter also
/// refuses precisions above `u16::MAX`, so larger ones are padded by hand.
const EXACT_DIGITS: usize = 1100;

/// `format!("{:.p$}", a)` for any `p` (exact: the padding digits are zeros).
pub(crate) fn fixed_digits(a: f64, p: usize) -> String {
    if p <= EXACT_DIGITS {
        return format!("{:.*}", p, a);
    }
    let mut s = format!("{:.*}", EXACT_DIGITS, a);
    s.extend(std::iter::repeat_n('0', p - EXACT_DIGITS));
    s
}

/// `format!("{:.p$e}", a)` for any `p` (exact: the padding digits are zeros).
fn sci_digits(a: f64, p: usize) -> String {
    if p <= EXACT_DIGITS {
        return format!("{:.*e}", p, a);
    }
    let s = format!("{:.*e}", EXACT_DIGITS, a);
    match s.split_once('e') {
        Some((m, e)) => {
            let mut out = String::with_capacity(p + 8);
            out.push_str(m);
            out.extend(std::iter::repeat_n('0', p - EXACT_DIGITS));
            out.push('e');
            out.push_str(e);
            out
        }
        None => s,
    }
}

/// Render |f| under a float presentation type (no sign, no padding).
fn float_body(a: f64, ty: char, prec: Option<usize>, alt: bool) -> String {
    let upper = ty.is_ascii_uppercase();
    if a.is_nan() {
        return if upper { "NAN".into() } else { "nan".into() };
    }
    if a.is_infinite() {
        return if upper { "INF".into() } else { "inf".into() };
    }
    let sci = |p: usize| -> (String, i32) {
        let s = sci_digits(a, p);
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        (m.to_string(), e.parse().unwrap_or(0))
    };
    let mut s = match ty {
        'f' | 'F' | '%' => {
            let p = prec.unwrap_or(6);
            let mut s = fixed_digits(a, p);
            if alt && p == 0 {
                s.push('.');
            }
            s
        }
        'e' | 'E' => {
            let p = prec.unwrap_or(6);
            let (mut m, e) = sci(p);
            if alt && p == 0 {
                m.push('.');
            }
            push_exp(&mut m, e, 'e');
            m
        }
        'g' | 'G' | 'n' | 'r' => {
            // 'r' is the '' type with a precision: like 'g' but keeps a ".0".
            let p = prec.unwrap_or(6).max(1);
            let (_, e) = sci(p - 1);
            let limit = if ty == 'r' { p as i64 - 1 } else { p as i64 };
            if e >= -4 && (e as i64) < limit {
                let dec = (p as i64 - 1 - e as i64).max(0) as usize;
                let s = fixed_digits(a, dec);
                if alt {
                    if s.contains('.') {
                        s
                    } else {
                        format!("{s}.")
                    }
                } else {
                    let t = strip_zeros(&s);
                    if ty == 'r' && !t.contains('.') {
                        format!("{t}.0")
                    } else {
                        t
                    }
                }
            } else {
                let (m, e) = sci(p - 1);
                let mut m = if alt {
                    if m.contains('.') {
                        m
                    } else {
                        format!("{m}.")
                    }
                } else {
                    strip_zeros(&m)
                };
                push_exp(&mut m, e, 'e');
                m
            }
        }
        _ => float_repr(a),
    };
    if upper {
        s = s.to_uppercase();
    }
    s
}

/// Format a float under a parsed spec.
fn format_float_spec(f: f64, sp: &Spec) -> InterpResult<String> {
    if let Some(p) = sp.precision {
        // CPython's bound (formatter_unicode.c), then the digits' memory.
        if p > i32::MAX as usize {
            return Err(value_err("precision too big"));
        }
        super::budget::mem_check(p as u64)?;
    }
    let ty = sp.ty;
    if let (Some(g), Some(t)) = (sp.grouping, ty) {
        if !matches!(t, 'e' | 'E' | 'f' | 'F' | 'g' | 'G' | '%') {
            return Err(value_err(format!("Cannot specify '{g}' with '{t}'.")));
        }
    }
    let mut neg = f.is_sign_negative() && !f.is_nan();
    let mut a = f.abs();
    if ty == Some('%') {
        a *= 100.0;
    }
    let body = match ty {
        None => {
            if sp.precision.is_some() {
                float_body(a, 'r', sp.precision, sp.alt)
            } else {
                let mut r = float_repr(a);
                if sp.alt && a.is_finite() && !r.contains('.') {
                    match r.find('e') {
                        Some(i) => r.insert(i, '.'),
                        None => r.push('.'),
                    }
                }
                r
            }
        }
        Some(t) => float_body(a, t, sp.precision, sp.alt),
    };
    if sp.z
        && neg
        && body
            .chars()
            .all(|c| matches!(c, '0' | '.' | 'e' | 'E' | '+' | '-' | '%'))
    {
        neg = false;
    }
    let body = if ty == Some('%') {
        format!("{body}%")
    } else {
        body
    };
    // Split the integer digits from the rest for grouping.
    let split = body
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(body.len());
    let (intpart, rest) = body.split_at(split);
    if intpart.is_empty() {
        // inf / nan
        let sign = sign_str(neg, sp);
        return Ok(pad(&body, sign, sp, '>'));
    }
    Ok(finish_number(neg, "", intpart, rest, sp, 3))
}

/// Format a float under a spec.
///
/// # Errors
/// ValueError as CPython.
pub fn format_float(f: f64, spec: &str) -> InterpResult<String> {
    let sp = parse_spec(spec, "float")?;
    match sp.ty {
        None | Some('e' | 'E' | 'f' | 'F' | 'g' | 'G' | '%' | 'n') => format_float_spec(f, &sp),
        Some(c) => Err(unknown(c, "float")),
    }
}

/// Format a str under a spec.
///
/// # Errors
/// ValueError as CPython.
pub fn format_str(s: &str, spec: &str) -> InterpResult<String> {
    let sp = parse_spec(spec, "str")?;
    match sp.ty {
        None | Some('s') => {}
        Some(c) => return Err(unknown(c, "str")),
    }
    if let Some(g) = sp.grouping {
        return Err(value_err(format!("Cannot specify '{g}' with 's'.")));
    }
    if let Some(sign) = sp.sign {
        return Err(value_err(if sign == ' ' {
            "Space not allowed in string format specifier"
        } else {
            "Sign not allowed in string format specifier"
        }));
    }
    if sp.z {
        return Err(value_err(
            "Negative zero coercion (z) not allowed in string format specifier",
        ));
    }
    if sp.alt {
        return Err(value_err(
            "Alternate form (#) not allowed in string format specifier",
        ));
    }
    if sp.align == Some('=') {
        if sp.zero && spec.find('=').is_none() {
            // A bare '0' flag on a string pads on the right with zeros.
            let sp2 = Spec {
                align: Some('<'),
                ..sp.clone()
            };
            return Ok(pad(truncate(s, sp.precision), "", &sp2, '<'));
        }
        return Err(value_err(
            "'=' alignment not allowed in string format specifier",
        ));
    }
    Ok(pad(truncate(s, sp.precision), "", &sp, '<'))
}

fn truncate(s: &str, p: Option<usize>) -> &str {
    match p {
        Some(p) => match s.char_indices().nth(p) {
            Some((b, _)) => &s[..b],
            None => s,
        },
        None => s,
    }
}

/// `format(value, spec)` for any value; `str_of` renders `str(value)`.
///
/// # Errors
/// ValueError/TypeError as CPython.
pub fn format_value(
    v: &Value,
    spec: &str,
    str_of: &dyn Fn(&Value) -> InterpResult<String>,
) -> InterpResult<String> {
    match v {
        Value::Int(i) => {
            if spec.is_empty() {
                return Ok(i.to_string());
            }
            format_int(IntRef::Small(*i), spec, "int")
        }
        Value::Bool(b) => {
            if spec.is_empty() {
                return Ok(if *b { "True".into() } else { "False".into() });
            }
            format_int(IntRef::Small(*b as i64), spec, "bool")
        }
        Value::Big(b) => {
            if spec.is_empty() {
                return str_of(v);
            }
            format_int(IntRef::Big(b), spec, "int")
        }
        Value::Float(f) => format_float(*f, spec),
        Value::Str(s) => {
            if spec.is_empty() {
                return Ok(s.as_str().to_string());
            }
            format_str(s.as_str(), spec)
        }
        _ => {
            if spec.is_empty() {
                str_of(v)
            } else {
                Err(type_err(format!(
                    "unsupported format string passed to {}.__format__",
                    v.type_name()
                )))
            }
        }
    }
}

/// Fast path of the format-spec mini-language for the commonest numeric
/// specs, written straight into `out`: `[0][width](d|)` for an int and
/// `[0][width].prec f` for a float (no fill, align, sign, grouping or `#`).
/// Returns `Ok(false)` without writing when the spec or value is anything
/// else (the general path then handles it); the output is identical to
/// [`format_value`]'s, and so is the memory preflight of the width.
///
/// # Errors
/// `memory` limit error (the same preflight as [`parse_spec`]).
pub fn format_simple_into(v: &Value, spec: &str, out: &mut String) -> InterpResult<bool> {
    let b = spec.as_bytes();
    let mut i = 0;
    let zero = b.first() == Some(&b'0');
    if zero {
        i += 1;
    }
    let mut width = 0usize;
    let w0 = i;
    while i < b.len() && b[i].is_ascii_digit() && i - w0 < 4 {
        width = width * 10 + usize::from(b[i] - b'0');
        i += 1;
    }
    let mut prec = None;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let p0 = i;
        let mut p = 0usize;
        while i < b.len() && b[i].is_ascii_digit() && i - p0 < 2 {
            p = p * 10 + usize::from(b[i] - b'0');
            i += 1;
        }
        if i == p0 {
            return Ok(false);
        }
        prec = Some(p);
    }
    let ty = match &b[i..] {
        [] => None,
        [t] => Some(*t),
        _ => return Ok(false),
    };
    let mut digits = [0u8; 64];
    let (neg, body): (bool, &[u8]) = match (v, ty, prec) {
        (Value::Int(n), None | Some(b'd'), None) => {
            let k = super::value::decimal_digits(n.unsigned_abs(), &mut digits);
            (*n < 0, &digits[k..])
        }
        (Value::Float(f), Some(b'f'), Some(p)) if p <= 18 => {
            let Some(n) = fixed_scaled(f.abs(), p as u32) else {
                return Ok(false);
            };
            let mut k = digits.len();
            let mut u = n;
            let mut emitted = 0;
            loop {
                if p > 0 && emitted == p {
                    k -= 1;
                    digits[k] = b'.';
                }
                k -= 1;
                digits[k] = b'0' + (u % 10) as u8;
                u /= 10;
                emitted += 1;
                if u == 0 && emitted > p {
                    break;
                }
            }
            (f.is_sign_negative(), &digits[k..])
        }
        _ => return Ok(false),
    };
    // The same preflight as parse_spec (width and precision size the output).
    super::budget::mem_check((width as u64) * 4 + prec.unwrap_or(0) as u64)?;
    let len = body.len() + usize::from(neg);
    let padn = width.saturating_sub(len);
    if !zero {
        out.extend(std::iter::repeat_n(' ', padn));
    }
    if neg {
        out.push('-');
    }
    if zero {
        out.extend(std::iter::repeat_n('0', padn));
    }
    // `body` is ASCII digits and '.', so every byte is a char.
    out.extend(body.iter().map(|c| char::from(*c)));
    Ok(true)
}

/// `round_half_even(a * 10^p)` exactly, for finite `0 <= a < 1e17` and
/// `p <= 18` (None otherwise). Why exact: `a = m * 2^e` with `m < 2^53`,
/// so `m * 10^p < 2^113` fits a u128 and the division by `2^-e` is a shift
/// whose remainder decides the rounding — CPython's correctly rounded
/// `'%.*f'`.
fn fixed_scaled(a: f64, p: u32) -> Option<u128> {
    if !a.is_finite() || a >= 1e17 || p > 18 {
        return None;
    }
    let bits = a.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), exp - 1075)
    };
    let scale = 10u128.pow(p);
    if e >= 0 {
        // a < 1e17 < 2^57, so the shift and the product stay below 2^117.
        return Some((u128::from(m) << e) * scale);
    }
    let k = (-e) as u32;
    let prod = u128::from(m) * scale;
    if k >= 120 {
        // prod < 2^113 < 2^(k-1): less than half a unit, rounds to 0.
        return Some(0);
    }
    let q = prod >> k;
    let r = prod & ((1u128 << k) - 1);
    let half = 1u128 << (k - 1);
    Some(if r > half || (r == half && q & 1 == 1) {
        q + 1
    } else {
        q
    })
}

#[cfg(test)]
mod tests {

    #[test]
    fn simple_spec_fast_path_matches_general_path() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let specs = [
            "05d", "d", "", "3", "012", "0", "00", "1.3f", ".0f", ".3f", "010.2f", "8.18f", ".17f",
            "07.1f",
        ];
        let mut floats: Vec<f64> = vec![
            0.0, -0.0, 0.5, 1.5, 2.5, -2.5, 0.125, 0.0625, 1e16, 9.999e16, 5e-324, 1e-300, 0.1,
            0.3, 2.675, 1.0005, 123.4565,
        ];
        for _ in 0..20000 {
            let x = f64::from_bits(next());
            if x.is_finite() {
                floats.push(x);
            }
            let y = (next() % 2_000_000) as f64 / 7.0 - 100_000.0;
            floats.push(y);
            floats.push((next() % 100_000) as f64 / 1000.0);
        }
        let ints = [0i64, 7, -7, 42, -12345, i64::MAX, i64::MIN, 99999, 100000];
        for spec in specs {
            let mut vals: Vec<Value> = floats.iter().map(|f| Value::Float(*f)).collect();
            vals.extend(ints.iter().map(|i| Value::Int(*i)));
            for v in &vals {
                let mut fast = String::new();
                let took = format_simple_into(v, spec, &mut fast).unwrap_or(false);
                if took {
                    let slow = format_value(v, spec, &|_| Ok(String::new())).unwrap_or_default();
                    assert_eq!(fast, slow, "{v:?} with {spec:?}");
                }
            }
        }
    }

    use super::*;

    #[test]
    fn float_repr_matches_cpython() {
        let cases: &[(f64, &str)] = &[
            (1e16, "1e+16"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (123456789012345.0, "123456789012345.0"),
            (1.2345678901234567e16, "1.2345678901234568e+16"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (1.5, "1.5"),
            (1e22, "1e+22"),
            (9999999999999998.0, "9999999999999998.0"),
            (0.30000000000000004, "0.30000000000000004"),
            (f64::INFINITY, "inf"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
        ];
        for (f, want) in cases {
            assert_eq!(float_repr(*f), *want, "{f:e}");
        }
    }

    fn fi(v: i64, s: &str) -> String {
        format_int(IntRef::Small(v), s, "int").unwrap_or_else(|e| e.msg.clone())
    }
    fn ff(v: f64, s: &str) -> String {
        format_float(v, s).unwrap_or_else(|e| e.msg.clone())
    }

    #[test]
    fn format_specs() {
        assert_eq!(fi(1234, "010,"), "00,001,234");
        assert_eq!(fi(-1234, "010,"), "-0,001,234");
        assert_eq!(fi(1234, "x<10,"), "1,234xxxxx");
        assert_eq!(fi(255, "#010x"), "0x000000ff");
        assert_eq!(fi(-255, "#x"), "-0xff");
        assert_eq!(fi(12, "08_b"), "000_1100");
        assert_eq!(fi(1234567, "_d"), "1_234_567");
        assert_eq!(
            fi(1, ".2d"),
            "Precision not allowed in integer format specifier"
        );
        assert_eq!(fi(3, "^7.2%"), "300.00%");
        assert_eq!(ff(12345.678, "015,.2f"), "0,000,012,345.68");
        assert_eq!(ff(1e5, ".3"), "1e+05");
        assert_eq!(ff(12.0, ".3"), "12.0");
        assert_eq!(ff(1.5e-7, "#g"), "1.50000e-07");
        assert_eq!(ff(1.0, "#.3g"), "1.00");
        assert_eq!(ff(0.5, "%"), "50.000000%");
        assert_eq!(ff(f64::INFINITY, "010.2f"), "0000000inf");
        assert_eq!(ff(f64::NAN, "+f"), "+nan");
        assert_eq!(ff(-0.0, "z.1f"), "0.0");
        assert_eq!(ff(1234.5, ","), "1,234.5");
        assert_eq!(ff(1e16, ","), "1e+16");
        assert_eq!(ff(0.0, "g"), "0");
        assert_eq!(ff(100.0, "g"), "100");
        assert_eq!(ff(1.0, "e"), "1.000000e+00");
        assert_eq!(
            ff(1.5, ",d"),
            "Unknown format code 'd' for object of type 'float'"
        );
        assert_eq!(format_str("abc", "^7").unwrap_or_default(), "  abc  ");
        assert_eq!(format_str("ab", "05").unwrap_or_default(), "ab000");
        assert_eq!(format_str("abc", ".2").unwrap_or_default(), "ab");
    }

    #[test]
    fn str_repr_quotes() {
        assert_eq!(str_repr("a'b"), "\"a'b\"");
        assert_eq!(str_repr("a'b\""), "'a\\'b\"'");
        assert_eq!(str_repr("\n\x01é\u{200b}"), "'\\n\\x01é\\u200b'");
    }
}
