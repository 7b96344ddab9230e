//! Reading JSON input files so that every error names the file and the
//! field.
//!
//! A file is read in two steps. [`read`] parses the text into a
//! [`serde_json::Value`], rejecting malformed JSON (with line and column)
//! and duplicate keys, which `serde_json` alone would let the last one win.
//! [`from_value`] then deserializes a value into a typed struct through
//! `serde_path_to_error`, so a wrong type, a negative number or an unknown
//! field comes back as a [`FieldError`] that names the field's path.

use anyhow::{anyhow, Context, Result};
use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Number, Value};
use std::fmt;
use std::path::Path;

/// Reads and parses the JSON file at `path`.
pub fn read(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse(&text, &path.display().to_string())
}

/// Parses `text`; `origin` (a file name) prefixes the error.
pub fn parse(text: &str, origin: &str) -> Result<Value> {
    serde_json::from_str::<StrictValue>(text).map(|v| v.0).map_err(|e| anyhow!("{origin}: invalid JSON: {e}"))
}

/// A field that could not be deserialized: its path (`a.b[2].c`, empty for
/// the value itself) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Path of the field, as `serde_path_to_error` writes it.
    pub path: String,
    /// The deserializer's message (`missing field`, `invalid type`, ...).
    pub message: String,
}

impl FieldError {
    /// An error of the field at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError { path: path.into(), message: message.into() }
    }

    /// The same error with `prefix` put in front of its path.
    pub fn under(self, prefix: &str) -> Self {
        let path = if self.path.is_empty() { prefix.to_string() } else { format!("{prefix}.{}", self.path) };
        FieldError { path, message: self.message }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "field `{}`: {}", self.path, self.message)
        }
    }
}

/// Deserializes `value` into a `T`, naming the failing field.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, FieldError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        // The root is written `.`; report no path for it.
        let path = if path == "." { String::new() } else { path };
        let message = e.into_inner().to_string();
        // An unknown field's path ends in the field itself, which the
        // message names already: report it at the enclosing object.
        let path = match path.rsplit_once('.') {
            _ if !message.starts_with(&format!("unknown field `{}`", last_segment(&path))) => path,
            Some((parent, _)) => parent.to_string(),
            None => String::new(),
        };
        FieldError::new(path, message)
    })
}

fn last_segment(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

/// The name of a JSON value's type, for "expected ..., found ..." messages.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Removes the string field `key` from `object`: `Ok(None)` if absent, an
/// error naming the field if it is not a string.
pub fn take_string(object: &mut Map<String, Value>, key: &str) -> Result<Option<String>, FieldError> {
    match object.remove(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(FieldError::new(key, format!("invalid type: {}, expected a string", type_name(&other)))),
    }
}

/// A [`Value`] whose objects may not repeat a key.
struct StrictValue(Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v).map(Value::Number).ok_or_else(|| E::custom("number out of range"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        StrictValue::deserialize(d).map(|v| v.0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(StrictValue(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format_args!("duplicate key `{key}`")));
            }
            let StrictValue(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_duplicate_keys_with_position() {
        let e = parse("{\"a\": 1,\n \"a\": 2}", "x.json").unwrap_err().to_string();
        assert!(e.starts_with("x.json: invalid JSON: duplicate key `a`"), "{e}");
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn field_error_paths() {
        #[derive(Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Inner {
            x: u32,
        }
        #[derive(Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Outer {
            inner: Inner,
        }
        let e = from_value::<Outer>(serde_json::json!({"inner": {"x": -4}})).unwrap_err();
        assert_eq!(e.to_string(), "field `inner.x`: invalid value: integer `-4`, expected u32");
        let e = from_value::<Outer>(serde_json::json!({})).unwrap_err();
        assert_eq!(e.to_string(), "missing field `inner`");
        assert_eq!(e.under("top").to_string(), "field `top`: missing field `inner`");
        let e = from_value::<Outer>(serde_json::json!({"inner": {"x": 1, "y": 2}})).unwrap_err();
        assert_eq!(e.to_string(), "field `inner`: unknown field `y`, expected `x`");
        let e = from_value::<Outer>(serde_json::json!({"inner": {"x": 1}, "z": 2})).unwrap_err();
        assert_eq!(e.to_string(), "unknown field `z`, expected `inner`");
    }
}
