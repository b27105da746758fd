//! What Agenta's API checks in a request body: the UUID and RFC 3339 forms, and how a
//! broken rule is reported ([`FieldProblem`]).

/// The JSON Schema `pattern` of a UUID as Agenta's API writes one (hyphenated hex).
pub const UUID_PATTERN: &str =
    "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";

/// True for a UUID in the hyphenated form ([`UUID_PATTERN`]).
pub fn is_uuid(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(index, byte)| match index {
            8 | 13 | 18 | 23 => *byte == b'-',
            _ => byte.is_ascii_hexdigit(),
        })
}

/// Schema-only: a UUID string, or `null`.
#[cfg(feature = "schema")]
pub(super) struct NullableUuid;

#[cfg(feature = "schema")]
impl schemars::JsonSchema for NullableUuid {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NullableUuid".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": ["string", "null"],
            "format": "uuid",
            "pattern": UUID_PATTERN
        })
    }
}

/// One way a request body breaks a rule Agenta's API enforces: where (the key path inside
/// the body), what, and pydantic's error type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    /// The key path inside the body, e.g. `["windowing", "rate"]`.
    pub path: Vec<String>,
    /// What is wrong, in pydantic's words where it has them.
    pub message: String,
    /// Pydantic's error type, e.g. `uuid_parsing`, `missing`, `extra_forbidden`.
    pub kind: &'static str,
}

impl FieldProblem {
    pub(super) fn at(path: &[&str], message: impl Into<String>, kind: &'static str) -> Self {
        Self {
            path: path.iter().map(|p| p.to_string()).collect(),
            message: message.into(),
            kind,
        }
    }
}

/// True for an RFC 3339 date-time (`YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`, `T` or space).
pub fn is_rfc3339(value: &str) -> bool {
    let b = value.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        b.get(range.clone())
            .is_some_and(|s| s.len() == range.len() && s.iter().all(u8::is_ascii_digit))
    };
    if b.len() < 20
        || !digits(0..4)
        || b[4] != b'-'
        || !digits(5..7)
        || b[7] != b'-'
        || !digits(8..10)
        || !matches!(b[10], b'T' | b't' | b' ')
        || !digits(11..13)
        || b[13] != b':'
        || !digits(14..16)
        || b[16] != b':'
        || !digits(17..19)
    {
        return false;
    }
    let mut at = 19;
    if b.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        while b.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        if at == start {
            return false;
        }
    }
    match &b[at..] {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit()),
        _ => false,
    }
}
