//! [`Data`] ↔ JSON for the providers.
//!
//! The python helper speaks *tagged* JSON so that nothing is lost on the way:
//! `null`/bools/strings/arrays (lists) as themselves, ints in the `i64` range
//! as numbers and others as `{"$big": "digits"}`, floats always as
//! `{"$float": repr}` (exact, and NaN/inf survive), `{"$tuple": [...]}`,
//! `{"$set": [...]}` and `{"$dict": [[k, v], ...]}` (any key type).
//! Command tools with `parse = "json"` produce *plain* JSON, mapped the
//! obvious way (objects become dicts with string keys).

use crate::json::float_repr;
use lackpy_policy::wire::{Data, MAX_DATA_DEPTH};
use serde_json::{Map, Value};

/// Encode a value for the python helper.
pub fn to_tagged(d: &Data) -> Value {
    let tag = |k: &str, v: Value| {
        let mut m = Map::with_capacity(1);
        m.insert(k.to_string(), v);
        Value::Object(m)
    };
    match d {
        Data::None => Value::Null,
        Data::Bool(b) => Value::Bool(*b),
        Data::Int(i) => Value::from(*i),
        Data::BigInt(s) => tag("$big", Value::String(s.clone())),
        Data::Float(f) => tag("$float", Value::String(float_repr(*f))),
        Data::Str(s) => Value::String(s.clone()),
        Data::List(v) => Value::Array(v.iter().map(to_tagged).collect()),
        Data::Tuple(v) => tag("$tuple", Value::Array(v.iter().map(to_tagged).collect())),
        Data::Set(v) => tag("$set", Value::Array(v.iter().map(to_tagged).collect())),
        Data::Dict(v) => tag(
            "$dict",
            Value::Array(
                v.iter()
                    .map(|(k, x)| Value::Array(vec![to_tagged(k), to_tagged(x)]))
                    .collect(),
            ),
        ),
    }
}

fn check_depth(depth: usize) -> Result<(), String> {
    if depth > MAX_DATA_DEPTH {
        Err(format!(
            "the value nests deeper than {MAX_DATA_DEPTH} levels"
        ))
    } else {
        Ok(())
    }
}

fn number(n: &serde_json::Number) -> Data {
    if let Some(i) = n.as_i64() {
        Data::Int(i)
    } else if let Some(u) = n.as_u64() {
        Data::BigInt(u.to_string())
    } else {
        Data::Float(n.as_f64().unwrap_or(f64::NAN))
    }
}

fn big_int(s: &str) -> Result<Data, String> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("malformed big integer {s:?}"));
    }
    // Normalise: a value that fits is an Int, as everywhere else.
    Ok(s.parse::<i64>()
        .map_or_else(|_| Data::BigInt(s.to_string()), Data::Int))
}

fn py_float(s: &str) -> Result<f64, String> {
    match s {
        "inf" => Ok(f64::INFINITY),
        "-inf" => Ok(f64::NEG_INFINITY),
        "nan" | "-nan" => Ok(f64::NAN),
        _ => s
            .parse::<f64>()
            .map_err(|_| format!("malformed float {s:?}")),
    }
}

/// Decode a tagged value from the python helper.
///
/// # Errors
/// A message when the value is malformed or nests deeper than
/// [`MAX_DATA_DEPTH`].
pub fn from_tagged(v: &Value, depth: usize) -> Result<Data, String> {
    check_depth(depth)?;
    let items = |v: &Value| -> Result<Vec<Data>, String> {
        match v {
            Value::Array(a) => a.iter().map(|x| from_tagged(x, depth + 1)).collect(),
            _ => Err("malformed tagged container".to_string()),
        }
    };
    Ok(match v {
        Value::Null => Data::None,
        Value::Bool(b) => Data::Bool(*b),
        Value::Number(n) => number(n),
        Value::String(s) => Data::Str(s.clone()),
        Value::Array(_) => Data::List(items(v)?),
        Value::Object(m) => {
            let Some((k, x)) = m.iter().next().filter(|_| m.len() == 1) else {
                return Err("malformed tagged value".to_string());
            };
            match (k.as_str(), x) {
                ("$big", Value::String(s)) => big_int(s)?,
                ("$float", Value::String(s)) => Data::Float(py_float(s)?),
                ("$tuple", _) => Data::Tuple(items(x)?),
                ("$set", _) => Data::Set(items(x)?),
                ("$dict", Value::Array(pairs)) => {
                    let mut out = Vec::with_capacity(pairs.len());
                    for p in pairs {
                        match p {
                            Value::Array(kv) if kv.len() == 2 => out.push((
                                from_tagged(&kv[0], depth + 1)?,
                                from_tagged(&kv[1], depth + 1)?,
                            )),
                            _ => return Err("malformed dict entry".to_string()),
                        }
                    }
                    Data::Dict(out)
                }
                _ => return Err(format!("unknown tag {k:?}")),
            }
        }
    })
}

/// Decode plain JSON (a command's output with `parse = "json"`).
///
/// # Errors
/// A message when the value nests deeper than [`MAX_DATA_DEPTH`].
pub fn from_plain(v: &Value, depth: usize) -> Result<Data, String> {
    check_depth(depth)?;
    Ok(match v {
        Value::Null => Data::None,
        Value::Bool(b) => Data::Bool(*b),
        Value::Number(n) => number(n),
        Value::String(s) => Data::Str(s.clone()),
        Value::Array(a) => Data::List(
            a.iter()
                .map(|x| from_plain(x, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(m) => Data::Dict(
            m.iter()
                .map(|(k, x)| Ok((Data::Str(k.clone()), from_plain(x, depth + 1)?)))
                .collect::<Result<_, String>>()?,
        ),
    })
}

/// Python's `str()` of a scalar argument, for command templates; `None`
/// for containers (which a template cannot take).
pub fn scalar_text(d: &Data) -> Option<String> {
    match d {
        Data::None => Some("None".to_string()),
        Data::Bool(true) => Some("True".to_string()),
        Data::Bool(false) => Some("False".to_string()),
        Data::Int(i) => Some(i.to_string()),
        Data::BigInt(s) | Data::Str(s) => Some(s.clone()),
        Data::Float(f) => Some(float_repr(*f)),
        Data::List(_) | Data::Tuple(_) | Data::Dict(_) | Data::Set(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tagged_round_trip() {
        let v = Data::Dict(vec![
            (
                Data::Int(1),
                Data::Tuple(vec![Data::Float(1.5), Data::Float(f64::INFINITY)]),
            ),
            (
                Data::Str("s".into()),
                Data::Set(vec![Data::BigInt("-99999999999999999999".into())]),
            ),
            (
                Data::None,
                Data::List(vec![Data::Bool(true), Data::Str("x".into())]),
            ),
        ]);
        let t = to_tagged(&v);
        let text = serde_json::to_string(&t).unwrap();
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(from_tagged(&back, 0).unwrap(), v);
        let nan = from_tagged(&to_tagged(&Data::Float(f64::NAN)), 0).unwrap();
        assert!(matches!(nan, Data::Float(f) if f.is_nan()));
        assert_eq!(float_repr(0.1), "0.1");
    }

    #[test]
    fn tagged_rejects_garbage() {
        for bad in [
            r#"{"$big": "12a"}"#,
            r#"{"$float": "x"}"#,
            r#"{"$dict": [[1]]}"#,
            r#"{"a": 1, "b": 2}"#,
            r#"{"$what": 1}"#,
        ] {
            let v: Value = serde_json::from_str(bad).unwrap();
            assert!(from_tagged(&v, 0).is_err(), "{bad}");
        }
        let mut deep = Value::Null;
        for _ in 0..(MAX_DATA_DEPTH + 2) {
            deep = Value::Array(vec![deep]);
        }
        assert!(from_tagged(&deep, 0).is_err());
        assert!(from_plain(&deep, 0).is_err());
    }

    #[test]
    fn plain_json_and_scalars() {
        let v: Value =
            serde_json::from_str(r#"{"a": [1, 2.5, null, true], "b": 18446744073709551615}"#)
                .unwrap();
        assert_eq!(
            from_plain(&v, 0).unwrap(),
            Data::Dict(vec![
                (
                    Data::Str("a".into()),
                    Data::List(vec![
                        Data::Int(1),
                        Data::Float(2.5),
                        Data::None,
                        Data::Bool(true)
                    ])
                ),
                (
                    Data::Str("b".into()),
                    Data::BigInt("18446744073709551615".into())
                ),
            ])
        );
        assert_eq!(scalar_text(&Data::Float(1.0)).unwrap(), "1.0");
        assert_eq!(scalar_text(&Data::Bool(false)).unwrap(), "False");
        assert!(scalar_text(&Data::List(vec![])).is_none());
    }
}
