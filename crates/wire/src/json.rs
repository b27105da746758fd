//! JSON helpers shared by the wire types.
//!
//! - [`from_json_slice`] / [`from_json_value`] decode with errors that name the JSON path
//!   of the offending field ([`WireDecodeError`]);
//! - crate-private serde adapters for the contract's key rules: a key that must be present
//!   but may be `null` (`required_nullable`, with the schema marker `Nullable`), a key that
//!   may be absent, `null` or set (`present_or_null`), an optional object that must not be
//!   empty (`non_empty_object`);
//! - `wire_enum!`: a string enum whose unknown values are kept (`Other`), written back as
//!   read, and listed closed in the schema.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

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
///
/// Numbers survive whole: an integer of any size inside an unknown field or an opaque
/// object (`effectiveParameters`, `data.parameters`) is kept digit for digit. (serde hands a
/// `Value` integer between 2^64 and 2^128 to a buffering deserializer, the one behind
/// `#[serde(flatten)]`, as a `u128` it cannot hold; such a document is decoded from its
/// text instead, where the number stays a literal.)
pub fn from_json_value<T: DeserializeOwned>(
    value: serde_json::Value,
) -> Result<T, WireDecodeError> {
    match serde_path_to_error::deserialize(&value) {
        Ok(decoded) => Ok(decoded),
        Err(err) => {
            let retried = serde_json::to_vec(&value)
                .ok()
                .and_then(|text| from_json_slice::<T>(&text).ok());
            retried.ok_or_else(|| WireDecodeError {
                type_name: short_type_name::<T>(),
                path: err.path().to_string(),
                reason: err.inner().to_string(),
            })
        }
    }
}

/// A key that must be present but may be `null` (serde treats a missing `Option`
/// as `None` unless the field has a `deserialize_with`).
pub(crate) fn required_nullable<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer)
}

/// A key that may be absent (outer `None`, with `#[serde(default)]`), `null` (`Some(None)`)
/// or set (`Some(Some(value))`): for a key Agenta writes as `null` in one case and leaves
/// out in another, so both round-trip.
pub(crate) fn present_or_null<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// An optional object that, when present, must have at least one key.
pub(crate) fn non_empty_object<'de, D>(
    deserializer: D,
) -> Result<Option<crate::JsonObject>, D::Error>
where
    D: Deserializer<'de>,
{
    let value = Option::<crate::JsonObject>::deserialize(deserializer)?;
    match value {
        Some(map) if map.is_empty() => Err(serde::de::Error::custom(
            "must be a non-empty object when present (an empty stamp is omitted, never sent)",
        )),
        other => Ok(other),
    }
}

/// Schema-only marker: a key that is required but may be `null` (`anyOf [T, null]`).
/// schemars' `required` alone would drop the `null`.
pub(crate) struct Nullable<T>(std::marker::PhantomData<T>);

impl<T: JsonSchema> JsonSchema for Nullable<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Nullable_{}", T::schema_name()).into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Option<T> as JsonSchema>::json_schema(generator)
    }
}

/// A wire enum whose values are strings: the known values as variants, and
/// `Other(String)` keeping a value this version does not know, as it was sent (a tolerant
/// reader). It is written back exactly as read. Its JSON Schema lists the known values only
/// (the contract is closed: an exact writer sends nothing else).
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$variant_meta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$variant_meta])* $variant, )+
            /// A value this version does not know, kept as it was sent.
            Other(String),
        }

        impl $name {
            /// Every value this version knows, in the contract's order.
            pub const KNOWN: &'static [&'static str] = &[$($text),+];

            /// The wire spelling.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $text, )+
                    Self::Other(value) => value,
                }
            }

            /// The variant for a wire spelling; an unknown one is kept as `Other`.
            pub fn from_wire(value: &str) -> Self {
                match value {
                    $( $text => Self::$variant, )+
                    other => Self::Other(other.to_string()),
                }
            }

            /// True for a value this version knows.
            pub fn is_known(&self) -> bool {
                !matches!(self, Self::Other(_))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl serde::de::Visitor<'_> for Visitor {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("a string")
                    }
                    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<$name, E> {
                        Ok($name::from_wire(value))
                    }
                }
                deserializer.deserialize_str(Visitor)
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "string",
                    "enum": [$($text),+]
                })
            }
        }
    };
}

pub(crate) use wire_enum;
