//! Numbers the way Agenta's two languages write them.
//!
//! A JSON number keeps its literal text here (serde_json's `arbitrary_precision`, on for the
//! whole workspace): an integer of any size is kept digit for digit, and a float is never
//! rounded on its way through Gatehouse. Two readings of that text matter to Agenta:
//!
//! - **Python** (the SDK: `json.loads` then `json.dumps`, what [`crate::pyjson`] writes and
//!   measures):
//!   an integer literal is an `int` of any size (`-0` reads as `0`); any literal with a
//!   fraction or an exponent is a `float`, written as `repr` writes it (`1e+16`, `1e-05`,
//!   `100.0`, `Infinity` for an overflow). [`python_number_text`], [`python_float_repr`].
//! - **Python through pydantic** (Agenta's API: the row's values are Python objects, written
//!   by pydantic-core's JSON serializer, what [`crate::agenta_api_json`] renders): the same
//!   `int` and `float`, a float spelled `0.00001` / `1e-7` / `1e+16` and `null` when not
//!   finite. [`pydantic_literal_text`], [`pydantic_float_text`].
//! - **JavaScript** (the runner: `JSON.parse` then `JSON.stringify`, what the
//!   [`crate::fingerprint`] hashes): every number is a double (`123456789012345678901234567890`
//!   becomes `1.2345678901234568e+29`, `1.0` becomes `1`, `-0` becomes `0`).
//!   [`js_number_text`].
//!
//! All three writers start from the same shortest round-trip digits of a double (Rust's `{:e}`,
//! CPython's `repr`, pydantic-core and ECMAScript's `Number::toString` all pick the shortest digit string that
//! reads back as the same double) and differ only in where they switch to an exponent and how
//! they spell it.

use std::borrow::Cow;

use serde_json::Number;

/// The shortest round-trip decimal digits of a finite, non-zero `value` (sign ignored) and the
/// position of the decimal point relative to them (`decpt`): `value = 0.d1d2... x 10^decpt`.
/// `1.5` gives `("15", 1)`, `0.001` gives `("1", -2)`, `1e16` gives `("1", 17)`.
///
/// Of two shortest digit strings equally close to the value, the even one, as CPython's
/// `repr`, pydantic-core and ECMAScript's `Number::toString` all choose
/// (`801185243389954.25` is `801185243389954.2`); Rust's `{:e}` picks the upper one.
fn shortest_digits(value: f64) -> (String, i32) {
    // `{:e}` writes the shortest round-trip digits as `d[.ddd]e[-]x`.
    let text = format!("{:e}", value.abs());
    let (mantissa, exponent) = text.split_once('e').unwrap_or((text.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let decpt = exponent.parse::<i32>().unwrap_or(0) + 1;
    match even_digits_of_a_tie(value.abs(), &digits, decpt) {
        Some(even) => (even, decpt),
        None => (digits, decpt),
    }
}

/// When `digits` (shortest, odd last digit) sit half a unit in their last place away from
/// `value`'s exact decimal expansion, the even neighbour at the same distance, if it reads
/// back as `value` too. A tie needs the exact expansion to end one digit after the shortest
/// digits, which only a long shortest form (15 digits or more) can: shorter ones are never
/// checked.
fn even_digits_of_a_tie(value: f64, digits: &str, decpt: i32) -> Option<String> {
    let count = digits.len();
    let last = *digits.as_bytes().last()?;
    if count < 15 || (last - b'0') % 2 == 0 {
        return None;
    }
    // The value rounded to one digit more than the shortest form: a tie shows `...5` there.
    let rounded = format!("{:.*e}", count, value);
    let rounded_digits: String = rounded
        .split('e')
        .next()?
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    if !rounded_digits.ends_with('5') {
        return None;
    }
    // Confirm on the exact expansion (a double has at most 767 significant digits).
    let exact = format!("{:.800e}", value);
    let (exact_mantissa, exact_exponent) = exact.split_once('e')?;
    let exact_digits: String = exact_mantissa
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    if exact_exponent.parse::<i32>().ok()? + 1 != decpt
        || exact_digits.as_bytes().get(count) != Some(&b'5')
        || exact_digits.bytes().skip(count + 1).any(|b| b != b'0')
    {
        return None;
    }
    // The two candidates are the truncation and the next string up; `digits` is one.
    let truncated = &exact_digits[..count];
    let even = if truncated == digits {
        // `digits` is the lower one; the upper one ends in the next digit (`9` would carry
        // into a shorter form, which is then never a tie of this length).
        if last == b'9' {
            return None;
        }
        format!("{}{}", &digits[..count - 1], char::from(last + 1))
    } else {
        // `digits` is the upper one: the truncation is the even one.
        let lower = truncated.to_string();
        if lower.as_bytes()[count - 1] % 2 != 0 {
            return None;
        }
        lower
    };
    let reread: f64 = format!("0.{even}e{decpt}").parse().ok()?;
    (reread == value).then_some(even)
}

/// `repr(value)` as CPython writes a float: the shortest round-trip digits, in positional
/// form with at least one digit after the point when the decimal exponent is in `-4..16`,
/// otherwise in exponent form (`1e+16`, `1.5e-07`: a sign and at least two exponent digits).
/// NaN and the infinities are written as `json.dumps` writes them: `NaN`, `Infinity`,
/// `-Infinity`.
///
/// ```
/// use gatehouse_wire::numbers::python_float_repr;
/// assert_eq!(python_float_repr(1e16), "1e+16");
/// assert_eq!(python_float_repr(1e15), "1000000000000000.0");
/// assert_eq!(python_float_repr(1.5e-7), "1.5e-07");
/// assert_eq!(python_float_repr(-0.0), "-0.0");
/// assert_eq!(python_float_repr(f64::INFINITY), "Infinity");
/// ```
pub fn python_float_repr(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    finite_float_text(value, FloatStyle::PYTHON_REPR)
}

/// How a Python float is written by pydantic-core's JSON serializer (pydantic 2.14,
/// pydantic-core 2.50), which is what Agenta's API answers with: FastAPI 0.139 serializes a
/// handler's return model with `dump_json`, so an interaction row's `Any` values
/// (`data.parameters`, `tags`, `meta`, ...) are written by it, never by `json.dumps`.
///
/// The same shortest round-trip digits as `repr`, in positional form while the decimal
/// exponent is in `-5..16` (one step further down than `repr`: `0.00001`, where `repr`
/// writes `1e-05`), otherwise in exponent form with a sign and no padding (`1e-7`, `1e+16`,
/// `1.5e+300`). NaN and the infinities are `null` (pydantic's default `ser_json_inf_nan`,
/// which Agenta's models keep).
///
/// ```
/// use gatehouse_wire::numbers::pydantic_float_text;
/// assert_eq!(pydantic_float_text(1e-5), "0.00001");
/// assert_eq!(pydantic_float_text(1e-7), "1e-7");
/// assert_eq!(pydantic_float_text(1e16), "1e+16");
/// assert_eq!(pydantic_float_text(1e15), "1000000000000000.0");
/// assert_eq!(pydantic_float_text(-0.0), "-0.0");
/// assert_eq!(pydantic_float_text(f64::NAN), "null");
/// ```
pub fn pydantic_float_text(value: f64) -> String {
    if !value.is_finite() {
        return "null".to_string();
    }
    finite_float_text(value, FloatStyle::PYDANTIC)
}

/// Where a float writer switches from positional to exponent form, and how it spells the
/// exponent. Both Python writers append `.0` to an integral value and keep `-0.0`.
#[derive(Clone, Copy)]
struct FloatStyle {
    /// The smallest decimal exponent (`decpt`, see [`shortest_digits`]) still written
    /// positionally; the largest is 16 for both.
    lowest_positional: i32,
    /// The exponent's digits are padded to at least two (`e-07`).
    pad_exponent: bool,
}

impl FloatStyle {
    const PYTHON_REPR: Self = Self {
        lowest_positional: -3,
        pad_exponent: true,
    };
    const PYDANTIC: Self = Self {
        lowest_positional: -4,
        pad_exponent: false,
    };
}

/// A finite float in `style`: the shortest round-trip digits, positional (at least one
/// digit after the point) or `d[.ddd]e<sign><exponent>`.
fn finite_float_text(value: f64, style: FloatStyle) -> String {
    let sign = if value.is_sign_negative() { "-" } else { "" };
    if value == 0.0 {
        return format!("{sign}0.0");
    }
    let (digits, decpt) = shortest_digits(value);
    let count = digits.len() as i32;
    if decpt >= style.lowest_positional && decpt <= 16 {
        if decpt <= 0 {
            format!(
                "{sign}0.{}{digits}",
                "0".repeat(decpt.unsigned_abs() as usize)
            )
        } else if decpt >= count {
            format!("{sign}{digits}{}.0", "0".repeat((decpt - count) as usize))
        } else {
            let (int_part, frac_part) = digits.split_at(decpt as usize);
            format!("{sign}{int_part}.{frac_part}")
        }
    } else {
        let exponent = decpt - 1;
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        let (first, rest) = digits.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        let width = if style.pad_exponent { 2 } else { 1 };
        format!(
            "{sign}{first}{point}{rest}e{exponent_sign}{:0width$}",
            exponent.unsigned_abs()
        )
    }
}

/// True when a JSON number literal is an integer literal (no fraction, no exponent): Python
/// reads it as an `int`, of any size.
pub fn is_integer_literal(literal: &str) -> bool {
    !literal.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'))
}

/// The double a JSON number literal denotes, correctly rounded (an overflow is an infinity,
/// an underflow a zero), as Python's `float()` and JavaScript's `Number()` read it. `NaN`,
/// `Infinity` and `-Infinity` (which only the Python reader of `crate::pyjson` lets through)
/// read as themselves.
pub fn literal_to_f64(literal: &str) -> f64 {
    match literal {
        "NaN" => f64::NAN,
        "Infinity" => f64::INFINITY,
        "-Infinity" => f64::NEG_INFINITY,
        // Rust's parser is correctly rounded and maps out-of-range literals to inf / 0.
        _ => literal.parse().unwrap_or(f64::NAN),
    }
}

/// How Python's `json.dumps` writes the number `json.loads` reads from `literal`: an integer
/// literal as its digits (`-0` as `0`; big integers digit for digit), anything else as the
/// `repr` of the float (see [`python_float_repr`]).
///
/// ```
/// use gatehouse_wire::numbers::python_literal_text;
/// assert_eq!(python_literal_text("123456789012345678901234567890"), "123456789012345678901234567890");
/// assert_eq!(python_literal_text("-0"), "0");
/// assert_eq!(python_literal_text("1E+16"), "1e+16");
/// assert_eq!(python_literal_text("1.50"), "1.5");
/// assert_eq!(python_literal_text("1e400"), "Infinity");
/// ```
pub fn python_literal_text(literal: &str) -> Cow<'_, str> {
    if literal == "NaN" || literal == "Infinity" || literal == "-Infinity" {
        return Cow::Borrowed(literal);
    }
    if is_integer_literal(literal) {
        // A JSON integer literal has no leading zeros and no `+`: its digits are Python's,
        // except that `-0` (and `-00...` never occurs) reads as the int 0.
        if literal.starts_with('-') && literal[1..].bytes().all(|b| b == b'0') {
            return Cow::Borrowed("0");
        }
        return Cow::Borrowed(literal);
    }
    Cow::Owned(python_float_repr(literal_to_f64(literal)))
}

/// [`python_literal_text`] of a serde_json number.
pub fn python_number_text(number: &Number) -> Cow<'_, str> {
    python_literal_text(number.as_str())
}

/// The length of [`python_number_text`], computed without building the text for an integer.
pub fn python_number_len(number: &Number) -> usize {
    let literal = number.as_str();
    if is_integer_literal(literal) {
        if literal.starts_with('-') && literal[1..].bytes().all(|b| b == b'0') {
            return 1;
        }
        return literal.len();
    }
    python_literal_text(literal).len()
}

/// How Agenta's API (pydantic-core, see [`pydantic_float_text`]) writes the number Python's
/// `json.loads` reads from `literal`: an integer literal as its digits, of any size (`-0` as
/// `0`: Python has no negative int zero), anything else as the float's
/// [`pydantic_float_text`] (`1e-05` as `0.00001`, `1E+16` as `1e+16`; `NaN`, `Infinity` and
/// an overflow such as `1e400` as `null`).
///
/// ```
/// use gatehouse_wire::numbers::pydantic_literal_text;
/// assert_eq!(pydantic_literal_text("123456789012345678901234567890"), "123456789012345678901234567890");
/// assert_eq!(pydantic_literal_text("-0"), "0");
/// assert_eq!(pydantic_literal_text("1e-05"), "0.00001");
/// assert_eq!(pydantic_literal_text("1.5e-07"), "1.5e-7");
/// assert_eq!(pydantic_literal_text("1e400"), "null");
/// ```
pub fn pydantic_literal_text(literal: &str) -> Cow<'_, str> {
    if literal == "NaN" || literal == "Infinity" || literal == "-Infinity" {
        return Cow::Borrowed("null");
    }
    if is_integer_literal(literal) {
        if literal.starts_with('-') && literal[1..].bytes().all(|b| b == b'0') {
            return Cow::Borrowed("0");
        }
        return Cow::Borrowed(literal);
    }
    Cow::Owned(pydantic_float_text(literal_to_f64(literal)))
}

/// `JSON.stringify(value)` for a JavaScript number: the shortest round-trip digits, in
/// positional form while the decimal exponent is in `-6..21`, otherwise as `1e+21` /
/// `1.5e-7`; `-0` is `0`; NaN and the infinities are `null`.
///
/// ```
/// use gatehouse_wire::numbers::js_number_text;
/// assert_eq!(js_number_text(1.0), "1");
/// assert_eq!(js_number_text(1e21), "1e+21");
/// assert_eq!(js_number_text(1e20), "100000000000000000000");
/// assert_eq!(js_number_text(1.5e-7), "1.5e-7");
/// assert_eq!(js_number_text(0.000001), "0.000001");
/// assert_eq!(js_number_text(123456789012345678901234567890.0), "1.2345678901234568e+29");
/// assert_eq!(js_number_text(-0.0), "0");
/// ```
pub fn js_number_text(value: f64) -> String {
    if !value.is_finite() {
        return "null".to_string();
    }
    if value == 0.0 {
        return "0".to_string();
    }
    let sign = if value < 0.0 { "-" } else { "" };
    let (digits, n) = shortest_digits(value);
    let k = digits.len() as i32;
    if k <= n && n <= 21 {
        format!("{sign}{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        let (int_part, frac_part) = digits.split_at(n as usize);
        format!("{sign}{int_part}.{frac_part}")
    } else if -6 < n && n <= 0 {
        format!("{sign}0.{}{digits}", "0".repeat(n.unsigned_abs() as usize))
    } else {
        let exponent = n - 1;
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        let (first, rest) = digits.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        format!(
            "{sign}{first}{point}{rest}e{exponent_sign}{}",
            exponent.unsigned_abs()
        )
    }
}

/// `JSON.stringify(JSON.parse(literal))` for a number literal (see [`js_number_text`]).
pub fn js_literal_text(literal: &str) -> String {
    js_number_text(literal_to_f64(literal))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `repr(float)` in CPython 3.11 (the values were chosen by hand; the texts are what
    /// CPython's documented `repr` rule gives: shortest digits, exponent form below 1e-4 and
    /// from 1e16 on).
    #[test]
    fn python_repr_matches_cpython() {
        let cases: &[(f64, &str)] = &[
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1.5, "1.5"),
            (100.0, "100.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (0.001, "0.001"),
            (-2.5e-7, "-2.5e-07"),
            (1.2345e100, "1.2345e+100"),
            (123456789.125, "123456789.125"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (1234567890123456.7, "1234567890123456.8"),
            (12345678901234567.0, "1.2345678901234568e+16"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (value, python) in cases {
            assert_eq!(python_float_repr(*value), *python, "repr({value:?})");
        }
    }

    /// Doubles whose exact value lies halfway between two shortest digit strings: CPython's
    /// `repr`, Node's `String(x)` and pydantic-core all write the even one (checked with
    /// CPython 3.11 `repr(float(exact))` and Node 20); Rust's `{:e}` alone writes the other.
    #[test]
    fn a_tie_between_two_shortest_forms_goes_to_the_even_one() {
        for (exact, shortest) in [
            ("801185243389954.25", "801185243389954.2"),
            ("161967638919791.125", "161967638919791.12"),
            ("111378794182439.875", "111378794182439.88"),
            ("2192633550888712.75", "2192633550888712.8"),
            ("1572522373513917.25", "1572522373513917.2"),
            ("2120501888032199.75", "2120501888032199.8"),
            ("894597036790149.75", "894597036790149.8"),
            ("208505777949505.375", "208505777949505.38"),
        ] {
            let value: f64 = exact.parse().unwrap();
            assert_eq!(python_float_repr(value), shortest, "repr {exact}");
            assert_eq!(pydantic_float_text(value), shortest, "pydantic {exact}");
            assert_eq!(js_number_text(value), shortest, "js {exact}");
            assert_eq!(
                python_float_repr(-value),
                format!("-{shortest}"),
                "-{exact}"
            );
        }
    }

    #[test]
    fn python_literal_text_reads_like_json_loads() {
        for (literal, python) in [
            ("0", "0"),
            ("-0", "0"),
            ("18446744073709551616", "18446744073709551616"),
            ("-9223372036854775809", "-9223372036854775809"),
            ("1.0", "1.0"),
            ("-0.0", "-0.0"),
            ("1E+16", "1e+16"),
            ("1.5e-7", "1.5e-07"),
            ("1e400", "Infinity"),
            ("-1e400", "-Infinity"),
            ("1e-400", "0.0"),
            ("-1e-400", "-0.0"),
            ("0.10", "0.1"),
            ("NaN", "NaN"),
        ] {
            assert_eq!(python_literal_text(literal), python, "{literal}");
            let number: Number = serde_json::from_str(literal).unwrap_or_else(|_| {
                // NaN is not JSON; the Python reader builds it.
                Number::from_string_unchecked(literal.to_string())
            });
            assert_eq!(python_number_len(&number), python.len(), "{literal}");
        }
    }

    /// `JSON.stringify(Number(literal))` in Node 20 (by the ECMAScript `Number::toString`
    /// rule: positional for exponents -7 < e < 21).
    #[test]
    fn js_text_matches_number_to_string() {
        for (literal, js) in [
            ("1", "1"),
            ("1.0", "1"),
            ("-0", "0"),
            ("-0.0", "0"),
            ("0.5", "0.5"),
            ("1e21", "1e+21"),
            ("123e18", "123000000000000000000"),
            ("1e-7", "1e-7"),
            ("1.5e-6", "0.0000015"),
            ("18446744073709551616", "18446744073709552000"),
            ("123456789012345678901234567890", "1.2345678901234568e+29"),
            ("-1.25e+30", "-1.25e+30"),
            ("1e400", "null"),
            ("9007199254740993", "9007199254740992"),
        ] {
            assert_eq!(js_literal_text(literal), js, "{literal}");
        }
    }
}
