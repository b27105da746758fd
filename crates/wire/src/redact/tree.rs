//! The two JSON trees the rule walks: `serde_json::Value` (the library's stamp) and
//! [`PyValue`] (Python's `json.loads` model, the exact Agenta comparison).

use serde_json::Value;

use crate::pyjson::{PyDict, PyValue};
use crate::JsonObject;

/// The little redaction needs of a JSON tree: objects with string keys, arrays, `null`.
/// Implemented by `serde_json::Value` (the library's stamp) and by [`PyValue`] (Python's
/// `json.loads` object model, for the exact Agenta comparison), so both redact by the one
/// rule (`rule.rs`).
pub(crate) trait Tree: Sized {
    /// The object type.
    type Object;
    fn as_object(&self) -> Option<&Self::Object>;
    fn as_object_mut(&mut self) -> Option<&mut Self::Object>;
    fn as_array(&self) -> Option<&[Self]>;
    fn as_array_mut(&mut self) -> Option<&mut [Self]>;
    fn is_null(&self) -> bool;
    fn get<'a>(object: &'a Self::Object, key: &str) -> Option<&'a Self>;
    /// True when some entry passes `test`.
    fn any_entry(object: &Self::Object, test: impl FnMut(&str, &Self) -> bool) -> bool;
    /// Keep the entries `keep` says yes to, in order.
    fn retain(object: &mut Self::Object, keep: impl FnMut(&str, &Self) -> bool);
    /// Visit every entry, mutably.
    fn for_each_mut(object: &mut Self::Object, visit: impl FnMut(&str, &mut Self));
    /// The text of a string (for a Python-model string: its `json.dumps` escaped form,
    /// whose ASCII is itself).
    fn as_text(&self) -> Option<&str>;
    /// Replace a string's text (same form as [`Tree::as_text`]).
    fn set_text(&mut self, text: String);
}

impl Tree for Value {
    type Object = JsonObject;
    fn as_object(&self) -> Option<&JsonObject> {
        Value::as_object(self)
    }
    fn as_object_mut(&mut self) -> Option<&mut JsonObject> {
        Value::as_object_mut(self)
    }
    fn as_array(&self) -> Option<&[Value]> {
        Value::as_array(self).map(Vec::as_slice)
    }
    fn as_array_mut(&mut self) -> Option<&mut [Value]> {
        Value::as_array_mut(self).map(Vec::as_mut_slice)
    }
    fn is_null(&self) -> bool {
        Value::is_null(self)
    }
    fn get<'a>(object: &'a JsonObject, key: &str) -> Option<&'a Value> {
        // A config's objects are small: comparing keys beats hashing one (SipHash).
        if object.len() <= 16 {
            object
                .iter()
                .find(|(k, _)| k.as_str() == key)
                .map(|(_, v)| v)
        } else {
            object.get(key)
        }
    }
    fn any_entry(object: &JsonObject, mut test: impl FnMut(&str, &Value) -> bool) -> bool {
        object.iter().any(|(key, value)| test(key, value))
    }
    fn retain(object: &mut JsonObject, mut keep: impl FnMut(&str, &Value) -> bool) {
        object.retain(|key, value| keep(key, value));
    }
    fn for_each_mut(object: &mut JsonObject, mut visit: impl FnMut(&str, &mut Value)) {
        for (key, value) in object.iter_mut() {
            visit(key, value);
        }
    }
    fn as_text(&self) -> Option<&str> {
        Value::as_str(self)
    }
    fn set_text(&mut self, text: String) {
        *self = Value::String(text);
    }
}

impl Tree for PyValue {
    type Object = PyDict;
    fn as_object(&self) -> Option<&PyDict> {
        match self {
            PyValue::Dict(map) => Some(map),
            _ => None,
        }
    }
    fn as_object_mut(&mut self) -> Option<&mut PyDict> {
        match self {
            PyValue::Dict(map) => Some(map),
            _ => None,
        }
    }
    fn as_array(&self) -> Option<&[PyValue]> {
        match self {
            PyValue::List(items) => Some(items),
            _ => None,
        }
    }
    fn as_array_mut(&mut self) -> Option<&mut [PyValue]> {
        match self {
            PyValue::List(items) => Some(items),
            _ => None,
        }
    }
    fn is_null(&self) -> bool {
        matches!(self, PyValue::Null)
    }
    // Every key redaction asks for is plain printable ASCII, whose escaped text is itself.
    fn get<'a>(object: &'a PyDict, key: &str) -> Option<&'a PyValue> {
        object.get(key)
    }
    fn any_entry(object: &PyDict, mut test: impl FnMut(&str, &PyValue) -> bool) -> bool {
        object.iter().any(|(key, value)| test(key, value))
    }
    fn for_each_mut(object: &mut PyDict, mut visit: impl FnMut(&str, &mut PyValue)) {
        for (key, value) in object.iter_mut() {
            visit(key, value);
        }
    }
    fn as_text(&self) -> Option<&str> {
        match self {
            PyValue::Str(text) => Some(text),
            _ => None,
        }
    }
    fn set_text(&mut self, text: String) {
        *self = PyValue::Str(text);
    }
    fn retain(object: &mut PyDict, mut keep: impl FnMut(&str, &PyValue) -> bool) {
        object.retain(|key, value| keep(key, value));
    }
}
