//! JSON helpers shared by the wire types.
//!
//! - [`from_json_slice`] / [`from_json_value`] decode with errors that name the JSON path
//!   of the offending field ([`WireDecodeError`]);
//! - crate-private serde adapters for the contract's key rules: a key that must be present
//!   but may be `null` (`required_nullable`, with the schema marker `Nullable`), a key that
//!   may be absent, `null` or set (`present_or_null`), an optional object that must not be
//!   empty (`non_empty_object`);
//! - `open_enum!`: a string enum whose unknown values are kept (`Unknown`), written back as
//!   read, and listed closed in the schema (every open enum of the contract, A and B);
//! - `string_enum_schema` and `StringEnum`: the one schema form of a string enum, the
//!   form code generators read (`enum`, never a `oneOf` of `const`s).

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

/// An optional count (`timeoutMs`, a size, token usage) read as Agenta's pydantic models read
/// an `int` from JSON, and as JSON Schema's `integer` matches: an integer, or a number whose
/// double is whole (`120000.0`, `1.2e5`), at least 0 and under 2^64. It is written back as
/// the integer, as those models write it (the runner's hash reads both as one double).
pub(crate) fn optional_whole_u64<'de, D>(deserializer: D) -> Result<Option<u64>, D::Error>
where
    D: Deserializer<'de>,
{
    let Some(number) = Option::<serde_json::Number>::deserialize(deserializer)? else {
        return Ok(None);
    };
    whole_u64(&number).map(Some).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "invalid value: {number}, expected a whole number from 0 to 2^64 - 1"
        ))
    })
}

fn whole_u64(number: &serde_json::Number) -> Option<u64> {
    if let Some(value) = number.as_u64() {
        return Some(value);
    }
    let value = number.as_f64()?;
    // 2^64 as a double; `as` is exact for every whole double below it.
    let whole = value.is_finite()
        && value.fract() == 0.0
        && value > -1.0
        && value < 18_446_744_073_709_551_616.0;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    whole.then_some(value as u64)
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

/// The schema of a string enum, in the form code generators read: `{"type": "string",
/// "enum": [...]}`, never a `oneOf` of `const`s (openapi-python-client turns that into
/// literals whose reader refuses every value but the first). Each value's doc, where
/// given, is listed under `description`.
///
/// `open`: a value a newer host adds is to be read by every client, generated ones
/// included, so the schema admits any string, the known ones listed first:
/// `{"anyOf": [{"title": name, "type": "string", "enum": [...]}, {"type": "string"}]}`. A
/// generator makes the known values an enum named `name` and the field `name | str`.
/// Only what a host's answer grows is open (the capabilities, the error codes); every
/// other enum lists the known values closed, as an exact writer sends them (a Rust
/// reader still keeps an unknown one: `open_enum!`).
#[cfg(feature = "schema")]
pub(crate) fn string_enum_schema(
    name: &str,
    description: &str,
    values: &[(&str, &str)],
    open: bool,
) -> schemars::Schema {
    let known: Vec<serde_json::Value> = values
        .iter()
        .map(|(value, _)| serde_json::Value::String((*value).to_string()))
        .collect();
    let mut map = crate::JsonObject::new();
    if open {
        let known_branch = serde_json::json!({"title": name, "type": "string", "enum": known});
        let any_branch = serde_json::json!({
            "type": "string",
            "description": "A value this version does not know (a newer peer's): readers keep it as sent."
        });
        map.insert(
            "anyOf".to_string(),
            serde_json::Value::Array(vec![known_branch, any_branch]),
        );
    } else {
        map.insert("type".to_string(), "string".into());
        map.insert("enum".to_string(), serde_json::Value::Array(known));
    }
    let mut text = description.trim().to_string();
    if values.iter().any(|(_, doc)| !doc.is_empty()) {
        let list: Vec<String> = values
            .iter()
            .map(|(value, doc)| match doc.trim() {
                "" => format!("- `{value}`"),
                doc => format!("- `{value}`: {doc}"),
            })
            .collect();
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&list.join("\n"));
    }
    if !text.is_empty() {
        map.insert("description".to_string(), serde_json::Value::String(text));
    }
    schemars::Schema::from(map)
}

/// `#[schemars(transform = StringEnum { name: "Capability", open: true })]` on a string
/// enum that derives `JsonSchema`: rewrites what schemars derives (a `oneOf` of
/// documented `const`s, or an `enum`) into `string_enum_schema`'s form. `name` is the
/// type's schema name; `open` says whether the schema admits any string.
#[cfg(feature = "schema")]
pub(crate) struct StringEnum {
    /// The type's schema name (the title of the known values when open).
    pub(crate) name: &'static str,
    /// The schema admits any string after the known ones.
    pub(crate) open: bool,
}

#[cfg(feature = "schema")]
impl schemars::transform::Transform for StringEnum {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        let description = schema
            .get("description")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut values: Vec<(String, String)> = Vec::new();
        if let Some(branches) = schema.get("oneOf").and_then(serde_json::Value::as_array) {
            for branch in branches {
                // Anything but a string const is not a string enum: leave it as derived
                // (the schema module's test refuses a `oneOf` of consts in schema/).
                let Some(value) = branch.get("const").and_then(serde_json::Value::as_str) else {
                    return;
                };
                let doc = branch
                    .get("description")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default();
                values.push((value.to_string(), doc.to_string()));
            }
        } else if let Some(known) = schema.get("enum").and_then(serde_json::Value::as_array) {
            for value in known {
                let Some(value) = value.as_str() else {
                    return;
                };
                values.push((value.to_string(), String::new()));
            }
        } else {
            return;
        }
        let pairs: Vec<(&str, &str)> = values
            .iter()
            .map(|(value, doc)| (value.as_str(), doc.as_str()))
            .collect();
        *schema = string_enum_schema(self.name, &description, &pairs, self.open);
    }
}

/// A string enum that reads tolerantly: each known spelling is a variant, any other string
/// is kept as `Unknown(text)` (a newer peer's value), never a decode failure, and is
/// written back exactly as read. It gets `KNOWN` (the known spellings, in declaration
/// order), `as_str`, `from_wire`, `is_known`, `Display`, `Serialize`, `Deserialize` and
/// `JsonSchema`.
///
/// The schema lists the known spellings only, as an `enum` (the contract is closed: an
/// exact writer sends nothing else). After a leading `schema: documented;` each
/// variant's one-line doc is listed in the description under the enum's doc (AgentPlat's
/// shapes, B1); that form takes doc lines only: one or more on the enum, exactly one on
/// each variant.
macro_rules! open_enum {
    (
        schema: documented;
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
                let description = [$($doc),+]
                    .iter()
                    .map(|line| line.trim())
                    .collect::<Vec<_>>()
                    .join("\n");
                $crate::json::string_enum_schema(
                    stringify!($name),
                    &description,
                    &[$( ($text, $variant_doc.trim()), )+],
                    false,
                )
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
                $crate::json::string_enum_schema(stringify!($name), "", &[$( ($text, ""), )+], false)
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

// The string enums' schema form: only with the schema support.
#[cfg(all(test, feature = "schema"))]
mod tests {
    use serde_json::json;

    use super::string_enum_schema;

    /// Counts read as pydantic reads an `int`: whole doubles too, written back as integers.
    #[test]
    fn a_count_is_any_whole_number_and_is_written_as_an_integer() {
        #[derive(serde::Deserialize, serde::Serialize)]
        struct Count {
            #[serde(default, deserialize_with = "super::optional_whole_u64")]
            n: Option<u64>,
        }
        for (text, read) in [
            ("120000", Some(120000)),
            ("120000.0", Some(120000)),
            ("1.2e5", Some(120000)),
            ("1E2", Some(100)),
            ("-0.0", Some(0)),
            ("0", Some(0)),
            ("18446744073709551615", Some(u64::MAX)),
            ("null", None),
        ] {
            let count: Count = serde_json::from_str(&format!("{{\"n\": {text}}}")).unwrap();
            assert_eq!(count.n, read, "{text}");
        }
        let absent: Count = serde_json::from_str("{}").unwrap();
        assert_eq!(absent.n, None);
        let written: Count = serde_json::from_str(r#"{"n": 120000.0}"#).unwrap();
        assert_eq!(serde_json::to_string(&written).unwrap(), r#"{"n":120000}"#);
        for text in [
            "1.5",
            "-1",
            "-0.5",
            "18446744073709551616",
            "1e400",
            "\"5\"",
            "true",
        ] {
            assert!(
                serde_json::from_str::<Count>(&format!("{{\"n\": {text}}}")).is_err(),
                "{text}"
            );
        }
    }

    #[test]
    fn an_open_string_enum_lists_the_known_values_then_admits_any_string() {
        let schema = string_enum_schema("Mode", "A mode.", &[("on", "On."), ("off", "")], true);
        assert_eq!(
            schema.as_value(),
            &json!({
                "anyOf": [
                    {"title": "Mode", "type": "string", "enum": ["on", "off"]},
                    {
                        "type": "string",
                        "description": "A value this version does not know (a newer peer's): readers keep it as sent."
                    }
                ],
                "description": "A mode.\n\n- `on`: On.\n- `off`"
            })
        );
    }

    #[test]
    fn a_closed_string_enum_is_an_enum_and_undocumented_values_add_no_list() {
        let schema =
            string_enum_schema("Order", "", &[("ascending", ""), ("descending", "")], false);
        assert_eq!(
            schema.as_value(),
            &json!({"type": "string", "enum": ["ascending", "descending"]})
        );
    }
}
