//! Decoding helpers whose errors name the JSON path of the offending field.

use serde::de::DeserializeOwned;

/// A document did not match a wire type. `path` is the JSON path of the field that
/// failed (`.` for the document itself), `reason` is serde's explanation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {type_name} at {path}: {reason}")]
pub struct WireDecodeError {
    /// The Rust type that was being decoded, e.g. `SessionInteraction`.
    pub type_name: &'static str,
    /// JSON path of the field that failed, e.g. `interaction.data.request.tool`.
    pub path: String,
    /// What was wrong there.
    pub reason: String,
}

fn short_type_name<T>() -> &'static str {
    let full = std::any::type_name::<T>();
    // Keep the last path segment, outside any generic arguments.
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}

/// Decode `bytes` as `T`, naming the failing field's path on error.
///
/// ```
/// use gatehouse_wire::interaction::RespondRequest;
/// let err = gatehouse_wire::from_json_slice::<RespondRequest>(br#"{"answer": 3}"#).unwrap_err();
/// assert_eq!(err.path, "answer");
/// ```
pub fn from_json_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, WireDecodeError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let result: Result<T, _> = serde_path_to_error::deserialize(&mut de);
    match result {
        Ok(value) => match de.end() {
            Ok(()) => Ok(value),
            Err(err) => Err(WireDecodeError {
                type_name: short_type_name::<T>(),
                path: ".".to_string(),
                reason: err.to_string(),
            }),
        },
        Err(err) => Err(WireDecodeError {
            type_name: short_type_name::<T>(),
            path: err.path().to_string(),
            reason: err.inner().to_string(),
        }),
    }
}

/// Decode an already-parsed JSON value as `T`, naming the failing field's path on error.
pub fn from_json_value<T: DeserializeOwned>(
    value: serde_json::Value,
) -> Result<T, WireDecodeError> {
    serde_path_to_error::deserialize(value).map_err(|err| WireDecodeError {
        type_name: short_type_name::<T>(),
        path: err.path().to_string(),
        reason: err.inner().to_string(),
    })
}
