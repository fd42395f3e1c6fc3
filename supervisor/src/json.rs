//! The JSON form of a program's value (docs/ARCHITECTURE.md "The language"):
//! tuples and sets as arrays, dict keys as strings (non-string keys via
//! their repr), ints beyond ±2^53 and non-finite floats as strings holding
//! their repr. Iterative where depth matters: values arrive depth-checked
//! ([`MAX_DATA_DEPTH`](lackpy_policy::wire::MAX_DATA_DEPTH)), so plain
//! recursion here is bounded.

use lackpy_policy::wire::Data;
use serde_json::{Map, Number, Value};

/// Largest integer magnitude JSON numbers carry exactly.
const SAFE_INT: i64 = 1 << 53;

/// Convert a value to its JSON form.
pub fn to_json(d: &Data) -> Value {
    match d {
        Data::None => Value::Null,
        Data::Bool(b) => Value::Bool(*b),
        Data::Int(i) if (-SAFE_INT..=SAFE_INT).contains(i) => Value::Number(Number::from(*i)),
        Data::Int(i) => Value::String(i.to_string()),
        Data::BigInt(s) => Value::String(s.clone()),
        Data::Float(f) => {
            Number::from_f64(*f).map_or_else(|| Value::String(float_repr(*f)), Value::Number)
        }
        Data::Str(s) => Value::String(s.clone()),
        Data::List(v) | Data::Tuple(v) | Data::Set(v) => {
            Value::Array(v.iter().map(to_json).collect())
        }
        Data::Dict(pairs) => {
            let mut m = Map::new();
            for (k, v) in pairs {
                let key = match k {
                    Data::Str(s) => s.clone(),
                    other => repr(other),
                };
                m.insert(key, to_json(v));
            }
            Value::Object(m)
        }
    }
}

/// CPython's `repr(float)`: shortest round-trip digits, scientific notation
/// outside 1e-4 <= |x| < 1e16.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "1.2345e-5".
    let sci = format!("{:e}", f.abs());
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let sign = if f < 0.0 { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let n = digits.len() as i32;
        let body = if exp >= 0 {
            if n > exp + 1 {
                format!(
                    "{}.{}",
                    &digits[..(exp + 1) as usize],
                    &digits[(exp + 1) as usize..]
                )
            } else {
                format!("{}{}.0", digits, "0".repeat((exp + 1 - n) as usize))
            }
        } else {
            format!("0.{}{}", "0".repeat((-exp - 1) as usize), digits)
        };
        format!("{sign}{body}")
    } else {
        let m = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits
        };
        let es = if exp < 0 { "-" } else { "+" };
        format!("{sign}{m}e{es}{:02}", exp.abs())
    }
}

/// CPython's `repr(str)` (printable-ASCII-and-beyond approximation: control
/// characters are escaped, other characters kept).
pub fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
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
            c if (c as u32) < 0x20 || (0x7f..0xa0).contains(&(c as u32)) => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python repr of a value (used for non-string dict keys).
pub fn repr(d: &Data) -> String {
    let seq = |v: &[Data], open: &str, close: &str| {
        format!(
            "{open}{}{close}",
            v.iter().map(repr).collect::<Vec<_>>().join(", ")
        )
    };
    match d {
        Data::None => "None".into(),
        Data::Bool(true) => "True".into(),
        Data::Bool(false) => "False".into(),
        Data::Int(i) => i.to_string(),
        Data::BigInt(s) => s.clone(),
        Data::Float(f) => float_repr(*f),
        Data::Str(s) => str_repr(s),
        Data::List(v) => seq(v, "[", "]"),
        Data::Tuple(v) if v.len() == 1 => format!("({},)", repr(&v[0])),
        Data::Tuple(v) => seq(v, "(", ")"),
        Data::Set(v) if v.is_empty() => "set()".into(),
        Data::Set(v) => seq(v, "{", "}"),
        Data::Dict(p) => format!(
            "{{{}}}",
            p.iter()
                .map(|(k, v)| format!("{}: {}", repr(k), repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_forms() {
        let d = Data::Dict(vec![
            (
                Data::Str("s".into()),
                Data::Tuple(vec![Data::Int(1), Data::Set(vec![Data::Bool(true)])]),
            ),
            (Data::Int(1), Data::Int(1 << 53)),
            (Data::Tuple(vec![Data::Int(1)]), Data::Int((1 << 53) + 1)),
            (
                Data::None,
                Data::BigInt("-123456789012345678901234567890".into()),
            ),
            (Data::Float(1.5), Data::Float(f64::NAN)),
            (Data::Bool(false), Data::Float(f64::NEG_INFINITY)),
        ]);
        assert_eq!(
            to_json(&d),
            json!({"s": [1, [true]], "1": 9007199254740992i64, "(1,)": "9007199254740993",
                   "None": "-123456789012345678901234567890", "1.5": "nan", "False": "-inf"})
        );
        assert_eq!(
            serde_json::to_string(&to_json(&Data::Float(-0.0))).ok(),
            Some("-0.0".into())
        );
    }

    #[test]
    fn float_reprs_match_cpython() {
        for (f, s) in [
            (0.1, "0.1"),
            (1.0, "1.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (123456789012345.6, "123456789012345.6"),
            (1e-4, "0.0001"),
            (1e-5, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (1e300, "1e+300"),
            (100.0, "100.0"),
            (0.30000000000000004, "0.30000000000000004"),
        ] {
            assert_eq!(float_repr(f), s);
        }
    }

    #[test]
    fn str_reprs_match_cpython() {
        assert_eq!(str_repr("a'b"), "\"a'b\"");
        assert_eq!(str_repr("a'b\""), "'a\\'b\"'");
        assert_eq!(str_repr("\n\x01é"), "'\\n\\x01é'");
    }
}
