//! `JsonText`: a JSON value crossing the FFI as its text.

use crate::error::GatehouseError;

/// A JSON document (object, array or scalar) as compact JSON text.
///
/// Kotlin, Swift and Python see a `String`; parse it with the platform's JSON library.
/// Text coming from the foreign side is checked to be valid JSON before Rust uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonText(pub String);

impl JsonText {
    /// Render a JSON value as compact text.
    ///
    /// ```
    /// let text = gatehouse_ffi::JsonText::from_value(&serde_json::json!({"a": 1}));
    /// assert_eq!(text.0, r#"{"a":1}"#);
    /// ```
    pub fn from_value(value: &serde_json::Value) -> Self {
        Self(value.to_string())
    }

    /// Render any serializable value (a wire type) as compact JSON text.
    pub fn from_serialize<T: serde::Serialize>(value: &T) -> Result<Self, GatehouseError> {
        serde_json::to_string(value)
            .map(Self)
            .map_err(|e| GatehouseError::Decode {
                msg: "could not render a value as JSON".to_string(),
                details: Some(e.to_string()),
            })
    }

    /// Parse the text back into a JSON value.
    pub fn to_value(&self) -> Result<serde_json::Value, GatehouseError> {
        serde_json::from_str(&self.0).map_err(|e| GatehouseError::Invalid {
            msg: "the text is not valid JSON".to_string(),
            details: Some(e.to_string()),
        })
    }
}

/// Lift: text from Kotlin/Swift/Python must be valid JSON.
fn lift_json_text(text: String) -> Result<JsonText, serde_json::Error> {
    serde_json::from_str::<serde::de::IgnoredAny>(&text)?;
    Ok(JsonText(text))
}

uniffi::custom_type!(JsonText, String, {
    lower: |value| value.0,
    try_lift: |text| Ok(lift_json_text(text)?),
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifting_rejects_text_that_is_not_json() {
        assert!(lift_json_text("{\"a\":".to_string()).is_err());
        assert_eq!(
            lift_json_text("[1, 2]".to_string()).unwrap(),
            JsonText("[1, 2]".to_string())
        );
    }

    #[test]
    fn round_trips_a_value() {
        let value = serde_json::json!({"agent": {"llm": {"model": "m"}}, "n": [1, null]});
        let text = JsonText::from_value(&value);
        assert_eq!(text.to_value().unwrap(), value);
    }
}
