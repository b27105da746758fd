//! The event cursor `?after=`, read as AgentPlat reads it (`Number(text)`, then a
//! non-negative safe integer), for the event list and the event stream.

use axum::extract::Query;
use axum::http::Uri;
use gatehouse_wire::error::{messages, GatehouseCode};

use super::rules::ExecError;

/// The largest `after` AgentPlat accepts (`Number.MAX_SAFE_INTEGER`).
pub(super) const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// The first `?after=` of the query string, if any (AgentPlat reads the first).
pub(super) fn first_after(uri: &Uri) -> Option<String> {
    Query::<Vec<(String, String)>>::try_from_uri(uri)
        .ok()?
        .0
        .into_iter()
        .find(|(key, _)| key == "after")
        .map(|(_, value)| value)
}

/// `?after=` read as AgentPlat reads it (`Number(text)`, then a non-negative safe
/// integer): absent or empty is 0; anything else that is not is
/// "Execution session event sequence is invalid".
pub(super) fn parse_after(text: Option<&str>) -> Result<u64, ExecError> {
    let invalid = || {
        ExecError::new(
            GatehouseCode::ValidationError,
            messages::EVENT_SEQUENCE_INVALID,
        )
    };
    let Some(text) = text else {
        return Ok(0);
    };
    let number = js_number(text).ok_or_else(invalid)?;
    if number.fract() != 0.0 || !(0.0..=MAX_SAFE_INTEGER).contains(&number) {
        return Err(invalid());
    }
    // A safe integer in range: exact as u64.
    Ok(number as u64)
}

/// JavaScript's `Number(text)` for a query value: surrounding whitespace ignored, empty
/// is 0, decimal with fraction and exponent, `0x`/`0o`/`0b` integers, `Infinity`;
/// anything else is `None` (NaN).
fn js_number(text: &str) -> Option<f64> {
    let t = text.trim();
    if t.is_empty() {
        return Some(0.0);
    }
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        // `get`, not slicing: a multi-byte character may straddle byte 2.
        let Some(head) = t.get(..2) else { continue };
        if t.len() > 2 && head.eq_ignore_ascii_case(prefix) {
            let digits = &t[2..];
            return u128::from_str_radix(digits, radix)
                .ok()
                .filter(|_| digits.bytes().all(|b| b.is_ascii_alphanumeric()))
                .map(|v| v as f64);
        }
    }
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    if unsigned == "Infinity" {
        return Some(if t.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    // Digits, at most one dot, an optional exponent: nothing Rust's parser accepts
    // beyond JavaScript's (no "inf", "nan").
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let mantissa_ok = !mantissa.is_empty()
        && mantissa != "."
        && mantissa.bytes().filter(|b| *b == b'.').count() <= 1
        && mantissa.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    let exponent_ok = exponent.is_none_or(|e| {
        let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    });
    if !(mantissa_ok && exponent_ok) {
        return None;
    }
    t.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_reads_as_javascript_numbers_do() {
        for (text, expected) in [
            ("", Some(0)),
            ("  7 ", Some(7)),
            ("0", Some(0)),
            ("-0", Some(0)),
            ("1.0", Some(1)),
            ("1e2", Some(100)),
            ("0x10", Some(16)),
            ("0b11", Some(3)),
            ("9007199254740991", Some(9_007_199_254_740_991)),
            ("9007199254740992", None),
            ("-1", None),
            ("1.5", None),
            ("abc", None),
            ("Infinity", None),
            ("inf", None),
            ("NaN", None),
            ("1e", None),
            (".", None),
            ("0x", None),
            ("1,2", None),
            // Found by schemathesis: a multi-byte character across byte 2 panicked.
            ("]\u{e0}\u{a7ad}\u{f9} i", None),
            ("\u{e0}1", None),
            ("0\u{e9}", None),
        ] {
            assert_eq!(parse_after(Some(text)).ok(), expected, "{text:?}");
        }
        assert_eq!(parse_after(None).ok(), Some(0));
        let err = parse_after(Some("abc")).unwrap_err();
        assert_eq!(err.code, GatehouseCode::ValidationError);
        assert_eq!(err.message, messages::EVENT_SEQUENCE_INVALID);
    }
}
