//! JSON helpers shared by the wire types.
//!
//! - [`from_json_slice`] / [`from_json_value`] decode with errors that name the JSON path
//!   of the offending field ([`WireDecodeError`]);
//! - crate-private serde adapters for the contract's key rules: a key that must be present
//!   but may be `null` (`required_nullable`, with the schema marker `Nullable`), a key that
//!   may be absent, `null` or set (`present_or_null`), an optional object that must not be
//!   empty (`non_empty_object`);
//! - `open_enum!`: a string enum whose unknown values are kept (`Unknown`), written back as
//!   read, and listed closed in the schema (every open enum of the contract, A and B).

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
#[cfg(feature = "schema")]
pub(crate) struct Nullable<T>(std::marker::PhantomData<T>);

#[cfg(feature = "schema")]
impl<T: schemars::JsonSchema> schemars::JsonSchema for Nullable<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Nullable_{}", T::schema_name()).into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Option<T> as schemars::JsonSchema>::json_schema(generator)
    }
}

/// A string enum that reads tolerantly: each known spelling is a variant, any other string
/// is kept as `Unknown(text)` (a newer peer's value), never a decode failure, and is
/// written back exactly as read. It gets `KNOWN` (the known spellings, in declaration
/// order), `as_str`, `from_wire`, `is_known`, `Display`, `Serialize`, `Deserialize` and
/// `JsonSchema`.
///
/// The schema lists the known spellings only (the contract is closed: an exact writer
/// sends nothing else), in one of two forms, kept as each contract writes its own:
///
/// - by default `{"type": "string", "enum": [...]}` (Agenta's shapes);
/// - after a leading `schema: one_of;`, a `oneOf` of `const`s, each with its variant's
///   one-line doc as its description, and the enum's doc as the schema's description
///   (AgentPlat's shapes, B1). That form takes doc lines only: one or more on the enum,
///   exactly one on each variant.
macro_rules! open_enum {
    (
        schema: one_of;
        $( #[doc = $doc:literal] )+
        pub enum $name:ident {
            $( #[doc = $variant_doc:literal] $variant:ident = $text:literal, )+
        }
    ) => {
        $crate::json::open_enum! {
            @enum [$( #[doc = $doc] )+] $name { $( [#[doc = $variant_doc]] $variant = $text, )+ }
        }

        #[cfg(feature = "schema")]
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let variants = vec![$(
                    serde_json::json!({
                        "type": "string",
                        "const": $text,
                        "description": $variant_doc.trim(),
                    }),
                )+];
                let mut map = $crate::JsonObject::new();
                map.insert("oneOf".to_string(), serde_json::Value::Array(variants));
                let description = [$($doc),+]
                    .iter()
                    .map(|line| line.trim())
                    .collect::<Vec<_>>()
                    .join("\n");
                map.insert("description".to_string(), serde_json::Value::String(description));
                schemars::Schema::from(map)
            }
        }
    };
    (
        $( #[$meta:meta] )*
        pub enum $name:ident {
            $( $( #[$variant_meta:meta] )* $variant:ident = $text:literal, )+
        }
    ) => {
        $crate::json::open_enum! {
            @enum [$( #[$meta] )*] $name { $( [$( #[$variant_meta] )*] $variant = $text, )+ }
        }

        #[cfg(feature = "schema")]
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
    // Everything but the schema: the type, its methods, Display and serde.
    (
        @enum [$( #[$meta:meta] )*] $name:ident {
            $( [$( #[$variant_meta:meta] )*] $variant:ident = $text:literal, )+
        }
    ) => {
        $( #[$meta] )*
        ///
        /// Unknown spellings are kept in `Unknown` (a newer peer's value), never an error.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $( $( #[$variant_meta] )* $variant, )+
            /// A value this version does not know, kept as it was sent.
            Unknown(String),
        }

        impl $name {
            /// The spelling of every value this version knows, in the contract's order.
            pub const KNOWN: &'static [&'static str] = &[$($text),+];

            /// The wire spelling (an unknown value's own text).
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $text, )+
                    Self::Unknown(text) => text,
                }
            }

            /// The value of a wire spelling; `Unknown` when this version does not know it.
            pub fn from_wire(text: &str) -> Self {
                match text {
                    $( $text => Self::$variant, )+
                    other => Self::Unknown(other.to_string()),
                }
            }

            /// True unless this is an `Unknown` value.
            pub fn is_known(&self) -> bool {
                !matches!(self, Self::Unknown(_))
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
                // A visitor, not a `String`: a known value is read without an allocation.
                struct Visitor;
                impl serde::de::Visitor<'_> for Visitor {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("a string")
                    }
                    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<$name, E> {
                        Ok($name::from_wire(text))
                    }
                }
                deserializer.deserialize_str(Visitor)
            }
        }
    };
}

pub(crate) use open_enum;
