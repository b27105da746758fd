//! Python's `json.dumps` with its default arguments (separators `", "` and `": "`,
//! `ensure_ascii=True`, `allow_nan=True`, insertion key order): written for either model,
//! and measured for a `serde_json::Value` without writing it.

use serde_json::Value;

use super::value::{push_python_char, PyValue};
use crate::numbers::{python_number_len, python_number_text};
use crate::JsonObject;

/// Python's `json.dumps(value)` with its defaults (separators `", "` and `": "`,
/// `ensure_ascii=True`, `allow_nan=True`).
pub fn dumps(value: &PyValue) -> String {
    let mut out = String::new();
    write_py_value(value, &mut out);
    out
}

fn write_py_value(value: &PyValue, out: &mut String) {
    match value {
        PyValue::Null => out.push_str("null"),
        PyValue::Bool(true) => out.push_str("true"),
        PyValue::Bool(false) => out.push_str("false"),
        PyValue::Number(text) => out.push_str(text),
        PyValue::Str(text) => {
            out.push('"');
            out.push_str(text);
            out.push('"');
        }
        PyValue::List(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_py_value(item, out);
            }
            out.push(']');
        }
        PyValue::Dict(map) => {
            out.push('{');
            for (index, (key, item)) in map.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                out.push('"');
                out.push_str(key);
                out.push_str("\": ");
                write_py_value(item, out);
            }
            out.push('}');
        }
    }
}

/// Python's `json.dumps(value)` with its defaults (separators `", "` and `": "`,
/// `ensure_ascii=True`, insertion key order): the exact text Agenta measures. Numbers are
/// written as Python reads their literal (see [`crate::numbers::python_number_text`]: big
/// integers digit for digit, `-0` as `0`, floats as `repr`).
///
/// ```
/// use gatehouse_wire::pyjson::python_json_dumps;
/// let v: serde_json::Value = serde_json::from_str(r#"{"a": [1, 1E+16, -0, null], "é": "x\n"}"#).unwrap();
/// assert_eq!(python_json_dumps(&v), r#"{"a": [1, 1e+16, 0, null], "\u00e9": "x\n"}"#);
/// ```
pub fn python_json_dumps(value: &Value) -> String {
    let mut out = String::with_capacity(python_json_dumps_len(value));
    write_value(value, &mut out);
    out
}

fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => out.push_str(&python_number_text(number)),
        Value::String(s) => write_python_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (index, (key, item)) in map.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_python_string(key, out);
                out.push_str(": ");
                write_value(item, out);
            }
            out.push('}');
        }
    }
}

/// `json.dumps(s)` for a string (`ensure_ascii=True`): quotes, the two-character escapes,
/// `\uXXXX` (lowercase hex) for every other character outside `0x20..=0x7E`, a surrogate
/// pair for an astral character.
fn write_python_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        push_python_char(u32::from(c), out);
    }
    out.push('"');
}

/// The exact byte length of Python's default `json.dumps(value)` (separators `", "` and
/// `": "`, `ensure_ascii=True`, insertion key order), computed without building the string.
///
/// Strings: `"`, `\`, `\n`, `\r`, `\t`, `\b`, `\f` take 2 bytes; any other character
/// outside `0x20..=0x7E` is `\uXXXX` (6 bytes; 12 for an astral character, written as a
/// surrogate pair). Numbers are measured as Python reads their literal: an integer literal
/// of any size as its digits (`-0` as `0`), any other as `repr` of the float (`1e+16`,
/// `1e-05`, `0.0001`, `100.0`). It is always `python_json_dumps(value).len()`.
///
/// ```
/// use gatehouse_wire::pyjson::python_json_dumps_len;
/// let v = serde_json::json!({"a": [1, 2.5, 1e16, null], "é": "x\n"});
/// // {"a": [1, 2.5, 1e+16, null], "\u00e9": "x\n"}
/// assert_eq!(python_json_dumps_len(&v), 45);
/// ```
pub fn python_json_dumps_len(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(number) => python_number_len(number),
        Value::String(s) => python_string_len(s),
        Value::Array(items) => {
            if items.is_empty() {
                2
            } else {
                2 + items.iter().map(python_json_dumps_len).sum::<usize>() + 2 * (items.len() - 1)
            }
        }
        Value::Object(map) => python_json_object_len(map),
    }
}

pub(crate) fn python_json_object_len(map: &JsonObject) -> usize {
    if map.is_empty() {
        return 2;
    }
    let items: usize = map
        .iter()
        .map(|(key, value)| python_string_len(key) + 2 + python_json_dumps_len(value))
        .sum();
    2 + items + 2 * (map.len() - 1)
}

/// Bytes that `json.dumps` (with `ensure_ascii=True`) writes for each byte of a UTF-8
/// string. A `&str` is valid UTF-8, so a character's whole cost can sit on its lead byte:
/// printable ASCII is 1 (`"` and `\\` are 2), `\n \r \t \b \f` are 2, the other control
/// characters and DEL are `\u00XX` (6); a 2- or 3-byte sequence is one BMP character,
/// `\uXXXX` (6); a 4-byte sequence is an astral character, a surrogate pair (12); a
/// continuation byte adds nothing. (0xC0, 0xC1 and 0xF5..=0xFF never occur in a `&str`.)
const PYTHON_ESCAPED_LEN: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = match byte as u8 {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0C => 2,
            0x20..=0x7E => 1,
            0x00..=0x1F | 0x7F => 6,
            0x80..=0xBF => 0,
            0xC0..=0xEF => 6,
            0xF0..=0xFF => 12,
        };
        byte += 1;
    }
    table
};

/// Length of Python's `json.dumps(s)` (quotes included). Almost every string is plain
/// printable ASCII, written as itself: a short string (under 16 bytes) is checked by
/// two overlapping word loads, a longer one by a branch-free fold the compiler
/// vectorizes, and only a string that is not plain falls back to one table lookup per
/// byte.
pub(crate) fn python_string_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    let n = bytes.len();
    let plain = if n >= 16 {
        // Written without an early exit so the compiler checks 16 or 32 bytes per step.
        bytes
            .iter()
            .fold(0u8, |bad, &b| bad | u8::from(!is_plain(b)))
            == 0
    } else if n >= 8 {
        // Two overlapping eight-byte loads cover 8 to 15 bytes.
        not_plain_bits(load_u64(&bytes[..8])) | not_plain_bits(load_u64(&bytes[n - 8..])) == 0
    } else if n >= 4 {
        // Two overlapping four-byte loads cover 4 to 7 bytes.
        let low = u64::from(load_u32(&bytes[..4]));
        let high = u64::from(load_u32(&bytes[n - 4..]));
        not_plain_bits(low | high << 32) == 0
    } else {
        // 0 to 3 bytes: the first, middle and last, padded with a plain byte (`a`).
        let mut word = u64::from_le_bytes([b'a'; 8]);
        if n > 0 {
            word = (word << 24)
                | u64::from(bytes[0])
                | u64::from(bytes[n / 2]) << 8
                | u64::from(bytes[n - 1]) << 16;
        }
        not_plain_bits(word) == 0
    };
    if plain {
        n + 2
    } else {
        2 + escaped_len(bytes)
    }
}

/// Printable ASCII other than `"` and `\\`: written by `json.dumps` as itself.
fn is_plain(b: u8) -> bool {
    (0x20..0x7F).contains(&b) && b != b'"' && b != b'\\'
}

fn load_u64(bytes: &[u8]) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(word)
}

fn load_u32(bytes: &[u8]) -> u32 {
    let mut word = [0; 4];
    word.copy_from_slice(&bytes[..4]);
    u32::from_le_bytes(word)
}

/// Zero when all eight bytes of `word` are printable ASCII other than `"` and `\`
/// (none at or above 0x80, none below 0x20, none 0x7F); otherwise some high bits are
/// set (a borrow may flag a plain neighbour too, which only costs the slow path).
fn not_plain_bits(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let zero_bytes = |w: u64| w.wrapping_sub(ONES) & !w;
    (word
        | word.wrapping_sub(0x20 * ONES)
        | zero_bytes(word ^ (0x7F * ONES))
        | zero_bytes(word ^ (u64::from(b'"') * ONES))
        | zero_bytes(word ^ (u64::from(b'\\') * ONES)))
        & HIGHS
}

/// The escaped length of `bytes`, byte by byte ([`PYTHON_ESCAPED_LEN`]).
fn escaped_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .map(|b| usize::from(PYTHON_ESCAPED_LEN[usize::from(*b)]))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn string_escapes_match_python() {
        // json.dumps("a\"\\\n\u0001\u007f\u00e9\u20ac\U0001F600") == '"a\\"\\\\\\n\\u0001\\u007f\\u00e9\\u20ac\\ud83d\\ude00"'
        let s = "a\"\\\n\u{1}\u{7f}\u{e9}\u{20ac}\u{1F600}";
        assert_eq!(python_string_len(s), 2 + 1 + 2 + 2 + 2 + 6 + 6 + 6 + 6 + 12);
    }

    /// The character-by-character definition the byte table must agree with.
    fn python_string_len_by_char(s: &str) -> usize {
        2 + s
            .chars()
            .map(|c| match c {
                '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
                ' '..='~' => 1,
                c if (c as u32) > 0xFFFF => 12,
                _ => 6,
            })
            .sum::<usize>()
    }

    #[test]
    fn byte_table_agrees_with_the_char_definition() {
        // Every ASCII byte, and characters at the UTF-8 length boundaries, alone and
        // between plain ASCII at several offsets.
        let mut samples: Vec<char> = (0u8..=0x7F).map(char::from).collect();
        samples.extend([
            '\u{80}',
            '\u{7FF}',
            '\u{800}',
            '\u{E9}',
            '\u{20AC}',
            '\u{D7FF}',
            '\u{E000}',
            '\u{FFFF}',
            '\u{10000}',
            '\u{1F600}',
            '\u{10FFFF}',
        ]);
        for c in samples {
            assert_eq!(
                python_string_len(&c.to_string()),
                python_string_len_by_char(&c.to_string()),
                "{c:?} alone"
            );
            // Every total length the short-string paths cover (0-3, 4-7, 8-15 bytes)
            // and the long path, with the character at every position.
            for plain_around in 0..18 {
                for offset in 0..=plain_around {
                    let s = format!(
                        "{}{c}{}",
                        "a".repeat(offset),
                        "b".repeat(plain_around - offset)
                    );
                    assert_eq!(
                        python_string_len(&s),
                        python_string_len_by_char(&s),
                        "{s:?}"
                    );
                }
            }
        }
        let long = "The quick brown fox jumps over the lazy dog. ".repeat(20);
        assert_eq!(python_string_len(&long), long.len() + 2);
        assert_eq!(python_string_len(""), 2);
    }

    #[test]
    fn containers_use_python_separators() {
        assert_eq!(python_json_dumps_len(&json!({})), 2);
        assert_eq!(python_json_dumps_len(&json!([])), 2);
        // '{"a": 1, "b": [true, false, null]}'
        assert_eq!(
            python_json_dumps_len(&json!({"a": 1, "b": [true, false, null]})),
            34
        );
        assert_eq!(python_json_dumps_len(&json!(-12)), 3);
        assert_eq!(python_json_dumps_len(&json!(u64::MAX)), 20);
    }
}
