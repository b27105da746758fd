//! The query endpoint's body (A5): filters and Agenta's windowing, checked as Agenta
//! checks them.

use serde::{Deserialize, Serialize};

use super::row::{InteractionKind, InteractionStatus};
#[cfg(feature = "schema")]
use super::validation::NullableUuid;
use super::validation::{is_rfc3339, is_uuid, FieldProblem};

/// Flag filters of a query (each `null` = either).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InteractionQueryFlags {
    /// Filter on `delivered_in_band`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_in_band: Option<bool>,
    /// Filter on `delivered_webhook`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_webhook: Option<bool>,
}

/// The `query` of a query request: every filter is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InteractionQuery {
    /// Only this session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Only this turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// Only this kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<InteractionKind>,
    /// Only this status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<InteractionStatus>,
    /// Flag filters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flags: Option<InteractionQueryFlags>,
    /// Only rows a person can still answer (status `pending`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub actionable_only: bool,
}

impl InteractionQueryFlags {
    /// Every key of this object: a server refuses any other (a misspelt filter must not
    /// select every row).
    pub const KEYS: &'static [&'static str] = &["delivered_in_band", "delivered_webhook"];
}

impl InteractionQuery {
    /// Every key of this object (Agenta's `SessionInteractionQuery`): a server refuses any
    /// other (a misspelt filter must not select every row).
    pub const KEYS: &'static [&'static str] = &[
        "session_id",
        "turn_id",
        "kind",
        "status",
        "flags",
        "actionable_only",
    ];
}

/// Sort order of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "schema", schemars(transform = crate::json::StringEnum { name: "Order", open: false }))]
pub enum Order {
    /// Oldest first.
    Ascending,
    /// Newest first.
    Descending,
}

/// Agenta's windowing (paging) parameters, checked as Agenta checks them
/// ([`Windowing::problems`]): `next` a UUID, `newest`/`oldest` RFC 3339 times, `rate`
/// within `0.0..=1.0`, `interval` positive.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Windowing {
    /// Only rows created at or before this RFC 3339 time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub newest: Option<String>,
    /// Only rows created at or after this RFC 3339 time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub oldest: Option<String>,
    /// Cursor: the id (a UUID) of the last row of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "NullableUuid"))]
    pub next: Option<String>,
    /// Page size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Sort order. Absent: newest first (descending), as Agenta's `Windowing` defaults;
    /// a query with no window at all lists in the order rows were written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<Order>,
    /// Agenta's bucketing interval, a positive integer (accepted, unused by interaction
    /// queries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("exclusiveMinimum" = 0)))]
    pub interval: Option<i64>,
    /// Agenta's sampling rate, `0.0..=1.0` (accepted, unused by interaction queries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("minimum" = 0.0, "maximum" = 1.0)))]
    pub rate: Option<f64>,
}

impl Windowing {
    /// Every key of this object (Agenta's `Windowing`): a server refuses any other.
    pub const KEYS: &'static [&'static str] = &[
        "newest", "oldest", "next", "limit", "order", "interval", "rate",
    ];

    /// Every rule Agenta's `Windowing` model enforces that this one breaks; empty when
    /// Agenta accepts it. Paths are relative to the windowing object.
    pub fn problems(&self) -> Vec<FieldProblem> {
        let mut problems = Vec::new();
        for (key, value) in [("newest", &self.newest), ("oldest", &self.oldest)] {
            if value.as_deref().is_some_and(|t| !is_rfc3339(t)) {
                problems.push(FieldProblem::at(
                    &[key],
                    "Input should be a valid datetime",
                    "datetime_from_date_parsing",
                ));
            }
        }
        if self.next.as_deref().is_some_and(|n| !is_uuid(n)) {
            problems.push(FieldProblem::at(
                &["next"],
                "Input should be a valid UUID",
                "uuid_parsing",
            ));
        }
        if self.interval.is_some_and(|i| i <= 0) {
            problems.push(FieldProblem::at(
                &["interval"],
                "Value error, Bucket interval must be a positive integer.",
                "value_error",
            ));
        }
        if self.rate.is_some_and(|r| !(0.0..=1.0).contains(&r)) {
            problems.push(FieldProblem::at(
                &["rate"],
                "Value error, Sampling rate must be between 0.0 and 1.0.",
                "value_error",
            ));
        }
        problems
    }
}

/// `POST /sessions/interactions/query` body.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InteractionQueryRequest {
    /// Filters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<InteractionQuery>,
    /// Paging.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windowing: Option<Windowing>,
}

impl InteractionQueryRequest {
    /// Every key of this object (Agenta's `SessionInteractionQueryRequest`): a server
    /// refuses any other.
    pub const KEYS: &'static [&'static str] = &["query", "windowing"];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(value: serde_json::Value) -> Vec<String> {
        let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    }

    fn sorted(keys: &[&str]) -> Vec<String> {
        let mut keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        keys.sort();
        keys
    }

    /// The `KEYS` lists are exactly the fields each type writes when all are set.
    #[test]
    fn the_key_lists_are_the_fields() {
        let flags = InteractionQueryFlags {
            delivered_in_band: Some(true),
            delivered_webhook: Some(false),
        };
        let query = InteractionQuery {
            session_id: Some("s".into()),
            turn_id: Some("t".into()),
            kind: Some(InteractionKind::UserApproval),
            status: Some(InteractionStatus::Pending),
            flags: Some(flags.clone()),
            actionable_only: true,
        };
        let windowing = Windowing {
            newest: Some("2026-01-01T00:00:00Z".into()),
            oldest: Some("2026-01-01T00:00:00Z".into()),
            next: Some("n".into()),
            limit: Some(1),
            order: Some(Order::Ascending),
            interval: Some(1),
            rate: Some(0.5),
        };
        let request = InteractionQueryRequest {
            query: Some(query.clone()),
            windowing: Some(windowing.clone()),
        };
        assert_eq!(keys(json(&flags)), sorted(InteractionQueryFlags::KEYS));
        assert_eq!(keys(json(&query)), sorted(InteractionQuery::KEYS));
        assert_eq!(keys(json(&windowing)), sorted(Windowing::KEYS));
        assert_eq!(keys(json(&request)), sorted(InteractionQueryRequest::KEYS));
    }

    fn json<T: Serialize>(value: &T) -> serde_json::Value {
        serde_json::to_value(value).unwrap()
    }
}
