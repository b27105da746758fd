//! JSON as Agenta's API writes a response body, for the documents Gatehouse serves in
//! Agenta's shape that hold caller-chosen values: the session-interaction rows (A4: a row's
//! `data.parameters`, `data.request`, `data.resolution`, `tags`, `meta`).
//!
//! Agenta's API does not answer with Python's `json.dumps`. Its handlers are declared with
//! a return model (`-> SessionInteractionResponse`), and FastAPI 0.139 serializes such a
//! return with the model's `dump_json`: pydantic-core writes the body, compact (no spaces),
//! UTF-8 (no `\u` escapes but the control characters'). The row's free-form values
//! (`Dict[str, Any]`) are whatever Python objects `json.loads` made of what was stored, so a
//! number is written as pydantic-core writes that `int` or `float`
//! ([`crate::numbers::pydantic_literal_text`]): `1e-05` comes back as `0.00001`, `1e-07` as
//! `1e-7`, `1E+16` as `1e+16`, `-0` as `0`, and a float that is not finite as `null`.
//! Strings, key order, `null`s and integers of any size are written as serde_json writes
//! them, which is pydantic-core's output already (its string escapes are serde_json's).
//!
//! This writer is for responses only. What Gatehouse stores, stamps and sends keeps each
//! number's literal text: the stamp is measured and written as `json.dumps` writes it
//! ([`crate::pyjson`]), and the resume sends the stamped config as it was stamped.
//!
//! ```
//! let row = serde_json::json!({"count": 1, "tags": {"lr": 1e-5, "t": 0.5, "n": 1e16}});
//! assert_eq!(
//!     gatehouse_wire::agenta_api_json::to_agenta_api_json(&row).unwrap(),
//!     r#"{"count":1,"tags":{"lr":0.00001,"t":0.5,"n":1e+16}}"#
//! );
//! ```

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Number, Value};

use crate::numbers::pydantic_literal_text;

/// `value` as Agenta's API would answer with it: compact JSON, every number spelled as
/// pydantic-core spells the Python number `json.loads` reads from its literal (see the
/// module docs). Fails only when `value` does not serialize to JSON at all.
pub fn to_agenta_api_json<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut tree = serde_json::to_value(value)?;
    respell_numbers_as_pydantic(&mut tree);
    serde_json::to_string(&tree)
}

/// Respell every number inside `value`, in place, as pydantic-core writes it
/// ([`pydantic_literal_text`]); a float that is not finite becomes `null`.
pub fn respell_numbers_as_pydantic(value: &mut Value) {
    match value {
        Value::Number(number) => {
            let respelled = match pydantic_literal_text(number.as_str()) {
                Cow::Borrowed(text) if text == number.as_str() => return,
                text => text.into_owned(),
            };
            *value = if respelled == "null" {
                Value::Null
            } else {
                Value::Number(Number::from_string_unchecked(respelled))
            };
        }
        Value::Array(items) => items.iter_mut().for_each(respell_numbers_as_pydantic),
        Value::Object(map) => map.values_mut().for_each(respell_numbers_as_pydantic),
        Value::Null | Value::Bool(_) | Value::String(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(text: &str) -> String {
        let value: Value = serde_json::from_str(text).unwrap();
        to_agenta_api_json(&value).unwrap()
    }

    /// What FastAPI 0.139.2 (pydantic 2.14.4, pydantic-core 2.50.5) answered for a model
    /// holding `{"x": json.loads(literal)}` in a `Dict[str, Any]` field, checked by hand
    /// against a handler declared `-> Model`.
    #[test]
    fn numbers_are_spelled_as_fastapi_answers_them() {
        for (literal, fastapi) in [
            ("1e-05", "0.00001"),
            ("1e-7", "1e-7"),
            ("1e-07", "1e-7"),
            ("1.5e-5", "0.000015"),
            ("0.000001", "1e-6"),
            ("1e16", "1e+16"),
            ("1e15", "1000000000000000.0"),
            ("1.5e300", "1.5e+300"),
            ("-0.0", "-0.0"),
            ("-0", "0"),
            ("0.1", "0.1"),
            ("100.0", "100.0"),
            ("1E+2", "100.0"),
            ("1e400", "null"),
            ("12345678901234567.0", "1.2345678901234568e+16"),
            (
                "123456789012345678901234567890",
                "123456789012345678901234567890",
            ),
            ("-9223372036854775809", "-9223372036854775809"),
        ] {
            assert_eq!(
                render(&format!(r#"{{"x":{literal}}}"#)),
                format!(r#"{{"x":{fastapi}}}"#),
                "{literal}"
            );
        }
    }

    #[test]
    fn everything_but_numbers_is_written_as_serde_json_writes_it() {
        let text = r#"{"é\u0001":["a\"\\\n\u007f😀",true,null,{},[]],"z":{"y":[1,2.5]}}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            to_agenta_api_json(&value).unwrap(),
            serde_json::to_string(&value).unwrap()
        );
    }
}
