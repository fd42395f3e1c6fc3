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

/// Most values (each scalar, container and dict key counts one) one tool
/// result decoded from JSON may hold: as many as one reply to the worker
/// can carry (its decoder counts each at a wire node's size in memory;
/// 524,288). Why decode JSON straight into [`Data`] against this count
/// instead of parsing a `serde_json::Value` first: a value is 80 bytes
/// there (`preserve_order`), so 8 MiB of `[],[],…` took ~310 MiB of
/// supervisor memory before any bound was checked.
pub const MAX_VALUES: usize =
    lackpy_policy::wire::MAX_FRAME_BYTES / std::mem::size_of::<lackpy_policy::wire::Node>();

/// Why JSON text did not decode into [`Data`].
#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    /// More than the allowed number of values ([`MAX_VALUES`]); decoding
    /// stopped there.
    #[error("the JSON holds more than {max} values (MAX_VALUES: what one reply to the program can carry)")]
    TooManyValues {
        /// The bound.
        max: usize,
    },
    /// Not JSON, too deep, or (tagged form) malformed.
    #[error("{0}")]
    Invalid(String),
}

/// Which JSON form to decode.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Plain,
    Tagged,
}

/// What decoding shares: the values left to build, and whether the bound
/// was hit (so that the error is told apart from a syntax error).
struct Budget {
    left: std::cell::Cell<usize>,
    over: std::cell::Cell<bool>,
}

impl Budget {
    fn take<E: serde::de::Error>(&self) -> Result<(), E> {
        match self.left.get().checked_sub(1) {
            Some(n) => {
                self.left.set(n);
                Ok(())
            }
            None => {
                self.over.set(true);
                Err(E::custom("too many values"))
            }
        }
    }
}

/// A [`Data`] decoded from JSON at `depth`, counted against `budget`.
#[derive(Clone, Copy)]
struct Seed<'a> {
    form: Form,
    budget: &'a Budget,
    depth: usize,
}

impl Seed<'_> {
    fn child<E: serde::de::Error>(self) -> Result<Self, E> {
        let depth = self.depth + 1;
        check_depth(depth).map_err(E::custom)?;
        Ok(Seed { depth, ..self })
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Seed<'_> {
    type Value = Data;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Data, D::Error> {
        d.deserialize_any(self)
    }
}

/// The items of a JSON array, each a [`Seed`] (lists, and tagged tuples
/// and sets).
struct Items<'a>(Seed<'a>);

impl<'de> serde::de::DeserializeSeed<'de> for Items<'_> {
    type Value = Vec<Data>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Vec<Data>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Items<'_> {
    type Value = Vec<Data>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array (malformed tagged container)")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Data>, A::Error> {
        let mut out = Vec::new();
        while let Some(x) = seq.next_element_seed(self.0)? {
            out.push(x);
        }
        Ok(out)
    }
}

/// A tagged dict's `[[k, v], ...]`.
struct Pairs<'a>(Seed<'a>);

impl<'de> serde::de::DeserializeSeed<'de> for Pairs<'_> {
    type Value = Vec<(Data, Data)>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Pairs<'_> {
    type Value = Vec<(Data, Data)>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of [key, value] pairs (malformed dict entry)")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(kv) = seq.next_element_seed(Pair(self.0))? {
            out.push(kv);
        }
        Ok(out)
    }
}

/// One `[k, v]` of a tagged dict.
struct Pair<'a>(Seed<'a>);

impl<'de> serde::de::DeserializeSeed<'de> for Pair<'_> {
    type Value = (Data, Data);
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Pair<'_> {
    type Value = (Data, Data);
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a [key, value] pair (malformed dict entry)")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error as _;
        let bad = || A::Error::custom("malformed dict entry");
        let k = seq.next_element_seed(self.0)?.ok_or_else(bad)?;
        let v = seq.next_element_seed(self.0)?.ok_or_else(bad)?;
        if seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
            return Err(bad());
        }
        Ok((k, v))
    }
}

impl<'de> serde::de::Visitor<'de> for Seed<'_> {
    type Value = Data;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Data, E> {
        self.budget.take()?;
        Ok(Data::None)
    }
    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<Data, E> {
        self.budget.take()?;
        Ok(Data::Bool(b))
    }
    fn visit_i64<E: serde::de::Error>(self, i: i64) -> Result<Data, E> {
        self.budget.take()?;
        Ok(Data::Int(i))
    }
    fn visit_u64<E: serde::de::Error>(self, u: u64) -> Result<Data, E> {
        self.budget.take()?;
        Ok(i64::try_from(u).map_or_else(|_| Data::BigInt(u.to_string()), Data::Int))
    }
    fn visit_f64<E: serde::de::Error>(self, f: f64) -> Result<Data, E> {
        self.budget.take()?;
        Ok(Data::Float(f))
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Data, E> {
        self.budget.take()?;
        Ok(Data::Str(s.to_string()))
    }
    fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Data, E> {
        self.budget.take()?;
        Ok(Data::Str(s))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Data, A::Error> {
        self.budget.take()?;
        let child = self.child()?;
        Items(child).visit_seq(seq).map(Data::List)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Data, A::Error> {
        use serde::de::Error as _;
        self.budget.take()?;
        let child = self.child()?;
        if self.form == Form::Plain {
            let mut out = Vec::new();
            while let Some(k) = map.next_key::<String>()? {
                self.budget.take()?;
                out.push((Data::Str(k), map.next_value_seed(child)?));
            }
            return Ok(Data::Dict(out));
        }
        let malformed = || A::Error::custom("malformed tagged value");
        let tag = map.next_key::<String>()?.ok_or_else(malformed)?;
        let d = match tag.as_str() {
            "$big" => big_int(&map.next_value::<String>()?).map_err(A::Error::custom)?,
            "$float" => {
                Data::Float(py_float(&map.next_value::<String>()?).map_err(A::Error::custom)?)
            }
            "$tuple" => Data::Tuple(map.next_value_seed(Items(child))?),
            "$set" => Data::Set(map.next_value_seed(Items(child))?),
            "$dict" => Data::Dict(map.next_value_seed(Pairs(child))?),
            _ => return Err(A::Error::custom(format!("unknown tag {tag:?}"))),
        };
        if map.next_key::<serde::de::IgnoredAny>()?.is_some() {
            return Err(malformed());
        }
        Ok(d)
    }
}

/// Decode plain JSON text straight into [`Data`] (objects become dicts
/// with str keys), building at most `max` values and nesting at most
/// [`MAX_DATA_DEPTH`] levels (and serde_json's own 128). Returns the
/// value and how many values it holds.
///
/// # Errors
/// [`JsonError::TooManyValues`] past `max` (nothing more is built), else
/// [`JsonError::Invalid`] for text that is not one JSON value.
pub fn plain_from_slice(text: &[u8], max: usize) -> Result<(Data, usize), JsonError> {
    use serde::de::DeserializeSeed as _;
    let budget = Budget {
        left: std::cell::Cell::new(max),
        over: std::cell::Cell::new(false),
    };
    let seed = Seed {
        form: Form::Plain,
        budget: &budget,
        depth: 0,
    };
    let mut de = serde_json::Deserializer::from_slice(text);
    let d = seed.deserialize(&mut de).map_err(|e| {
        if budget.over.get() {
            JsonError::TooManyValues { max }
        } else {
            JsonError::Invalid(e.to_string())
        }
    })?;
    de.end().map_err(|e| JsonError::Invalid(e.to_string()))?;
    Ok((d, max - budget.left.get()))
}

/// Deserializes one tagged value into [`Data`] with a shared bound; for a
/// field of a larger message (`next_value_seed`). On error
/// [`TaggedSeed::too_many`] says whether the bound was hit.
pub struct TaggedSeed {
    budget: Budget,
    max: usize,
}

impl TaggedSeed {
    /// A seed that builds at most `max` values.
    pub fn new(max: usize) -> Self {
        TaggedSeed {
            budget: Budget {
                left: std::cell::Cell::new(max),
                over: std::cell::Cell::new(false),
            },
            max,
        }
    }

    /// The error to report for a failed decode with this seed: the bound,
    /// when it was hit.
    pub fn too_many(&self) -> Option<JsonError> {
        self.budget
            .over
            .get()
            .then_some(JsonError::TooManyValues { max: self.max })
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for &TaggedSeed {
    type Value = Data;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Data, D::Error> {
        let seed = Seed {
            form: Form::Tagged,
            budget: &self.budget,
            depth: 0,
        };
        seed.deserialize(d)
    }
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
