//! The JSON form of a program's value (README.md, "Usage"): dicts keep
//! their insertion order (serde_json's `preserve_order`), tuples and sets
//! as arrays, dict keys as strings (non-string keys via their repr), ints
//! beyond ±2^53 and non-finite floats as strings holding their repr. Iterative where depth matters: values arrive depth-checked
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

/// The warning a run's report carries when its value held a lone surrogate.
pub const SURROGATE_VALUE_WARNING: &str = "the value holds a lone surrogate (a '\\ud800'-style escape), which strict JSON cannot carry: value is null; repr is exact";

/// A value of a run in surrogate mode ([`crate::RunReport`] `surrogates`)
/// that holds a lone surrogate becomes `null`, and `warnings` says so; the
/// repr stays exact. Every front end (CLI `--json`, MCP, serve) writes
/// strict JSON: a lone `"\ud800"` escape, as Python's `json.dumps` writes
/// it, is rejected by strict parsers (serde_json, Go's `encoding/json`,
/// I-JSON), so one program's value would make the whole object unreadable.
/// Returns whether the value was replaced.
pub fn null_surrogate_value(value: &mut Value, warnings: &mut Vec<String>) -> bool {
    if !holds_placeholder(value) {
        return false;
    }
    *value = Value::Null;
    warnings.push(SURROGATE_VALUE_WARNING.to_string());
    true
}

/// Whether a JSON value holds a placeholder character (in a string or key).
pub fn holds_placeholder(v: &Value) -> bool {
    use lackpy_policy::lang::surrogate::has_placeholder;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) if has_placeholder(s) => return true,
            Value::Array(a) => stack.extend(a.iter()),
            Value::Object(m) => {
                for (k, x) in m {
                    if has_placeholder(k) {
                        return true;
                    }
                    stack.push(x);
                }
            }
            _ => {}
        }
    }
    false
}

/// CPython's `repr(float)` and `repr(str)`: the interpreter's, so a
/// value's JSON form and its repr agree.
pub use lackpy_worker::interp::{float_repr, str_repr};

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
    fn dicts_keep_insertion_order() {
        let s = |x: &str| Data::Str(x.into());
        let d = Data::Dict(vec![
            (s("b"), Data::Int(1)),
            (
                s("a"),
                Data::Dict(vec![(s("z"), Data::Int(1)), (s("y"), Data::Int(2))]),
            ),
            (Data::Int(0), Data::None),
        ]);
        assert_eq!(
            serde_json::to_string(&to_json(&d)).ok().as_deref(),
            Some(r#"{"b":1,"a":{"z":1,"y":2},"0":null}"#)
        );
    }

    #[test]
    fn a_value_holding_a_surrogate_becomes_null_with_a_warning() {
        let d = Data::Dict(vec![(
            Data::Str("k\u{10F800}".into()),
            Data::List(vec![Data::Str("a\u{10FFFF}\u{10F83D}é".into())]),
        )]);
        let v = to_json(&d);
        assert!(holds_placeholder(&v));
        assert!(!holds_placeholder(
            &serde_json::json!({"a": ["\u{10F7FF}"]})
        ));
        let mut value = v;
        let mut warnings = Vec::new();
        assert!(null_surrogate_value(&mut value, &mut warnings));
        assert_eq!(value, Value::Null);
        assert_eq!(warnings, vec![SURROGATE_VALUE_WARNING.to_string()]);
        let mut plain = serde_json::json!({"a": "é"});
        assert!(!null_surrogate_value(&mut plain, &mut warnings));
        assert_eq!(plain, serde_json::json!({"a": "é"}));
        assert_eq!(warnings.len(), 1);
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
