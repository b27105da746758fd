//! Python's `json.loads`: CPython's scanner, its error messages and offsets, its limits.

use super::value::{PyDict, PyValue};
use super::write::push_python_char;
use crate::numbers::python_literal_text;

/// `json.loads` refused the text (the message and the character offset, as Python reports
/// them).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}: char {position}")]
pub struct PyJsonError {
    /// What was wrong, in Python's words (`Expecting value`, `Extra data`, ...).
    pub message: String,
    /// The character offset where Python stopped.
    pub position: usize,
}

/// CPython's limit on the digits of an `int` read from text (`sys.int_info.default_max_str_digits`).
pub const MAX_INT_DIGITS: usize = 4300;

/// Nesting beyond this is refused (CPython's own recursion limit stops a little under 1000).
pub const MAX_DEPTH: usize = 900;

/// Python's `json.loads(text)`.
pub fn loads(text: &str) -> Result<PyValue, PyJsonError> {
    let chars: Vec<char> = text.chars().collect();
    let mut parser = Parser { chars, at: 0 };
    if parser.peek() == Some('\u{feff}') {
        return Err(parser.error_at("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0));
    }
    parser.skip_whitespace();
    let value = parser.value(0)?;
    parser.skip_whitespace();
    if parser.at != parser.chars.len() {
        return Err(parser.error("Extra data"));
    }
    Ok(value)
}

struct Parser {
    chars: Vec<char>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn error_at(&self, message: &str, position: usize) -> PyJsonError {
        PyJsonError {
            message: message.to_string(),
            position,
        }
    }

    fn error(&self, message: &str) -> PyJsonError {
        self.error_at(message, self.at)
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
            self.at += 1;
        }
    }

    fn starts_with(&self, word: &str) -> bool {
        word.chars()
            .enumerate()
            .all(|(offset, c)| self.chars.get(self.at + offset) == Some(&c))
    }

    /// One value at the current position (no leading whitespace), as CPython's `scan_once`.
    fn value(&mut self, depth: usize) -> Result<PyValue, PyJsonError> {
        if depth > MAX_DEPTH {
            return Err(self.error("maximum recursion depth exceeded"));
        }
        let Some(c) = self.peek() else {
            return Err(self.error("Expecting value"));
        };
        match c {
            '"' => {
                self.at += 1;
                Ok(PyValue::Str(self.string()?))
            }
            '{' => self.object(depth),
            '[' => self.list(depth),
            'n' if self.starts_with("null") => {
                self.at += 4;
                Ok(PyValue::Null)
            }
            't' if self.starts_with("true") => {
                self.at += 4;
                Ok(PyValue::Bool(true))
            }
            'f' if self.starts_with("false") => {
                self.at += 5;
                Ok(PyValue::Bool(false))
            }
            'N' if self.starts_with("NaN") => {
                self.at += 3;
                Ok(PyValue::Number("NaN".into()))
            }
            'I' if self.starts_with("Infinity") => {
                self.at += 8;
                Ok(PyValue::Number("Infinity".into()))
            }
            '-' if self.starts_with("-Infinity") => {
                self.at += 9;
                Ok(PyValue::Number("-Infinity".into()))
            }
            '-' | '0'..='9' => self.number(),
            _ => Err(self.error("Expecting value")),
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?`: a fraction or an exponent that is
    /// not followed by digits is not part of the number (what follows is then "extra").
    fn number(&mut self) -> Result<PyValue, PyJsonError> {
        let start = self.at;
        let mut at = self.at;
        if self.chars.get(at) == Some(&'-') {
            at += 1;
        }
        let digits_start = at;
        match self.chars.get(at) {
            Some('0') => at += 1,
            Some('1'..='9') => {
                while matches!(self.chars.get(at), Some('0'..='9')) {
                    at += 1;
                }
            }
            _ => return Err(self.error("Expecting value")),
        }
        let int_digits = at - digits_start;
        let mut is_float = false;
        if self.chars.get(at) == Some(&'.') && matches!(self.chars.get(at + 1), Some('0'..='9')) {
            at += 2;
            while matches!(self.chars.get(at), Some('0'..='9')) {
                at += 1;
            }
            is_float = true;
        }
        if matches!(self.chars.get(at), Some('e' | 'E')) {
            let mut exponent = at + 1;
            if matches!(self.chars.get(exponent), Some('+' | '-')) {
                exponent += 1;
            }
            if matches!(self.chars.get(exponent), Some('0'..='9')) {
                at = exponent;
                while matches!(self.chars.get(at), Some('0'..='9')) {
                    at += 1;
                }
                is_float = true;
            }
        }
        let literal: String = self.chars[start..at].iter().collect();
        if !is_float && int_digits > MAX_INT_DIGITS {
            return Err(self.error(&format!(
                "Exceeds the limit ({MAX_INT_DIGITS} digits) for integer string conversion: value has {int_digits} digits"
            )));
        }
        self.at = at;
        Ok(PyValue::Number(python_literal_text(&literal).into_owned()))
    }

    /// The rest of a string after its opening quote, as `json.dumps` writes it (no quotes).
    fn string(&mut self) -> Result<String, PyJsonError> {
        let begin = self.at - 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.error_at("Unterminated string starting at", begin));
            };
            self.at += 1;
            match c {
                '"' => return Ok(out),
                '\\' => {
                    let Some(escape) = self.peek() else {
                        return Err(self.error_at("Unterminated string starting at", begin));
                    };
                    self.at += 1;
                    let code = match escape {
                        '"' => 0x22,
                        '\\' => 0x5C,
                        '/' => 0x2F,
                        'b' => 0x08,
                        'f' => 0x0C,
                        'n' => 0x0A,
                        'r' => 0x0D,
                        't' => 0x09,
                        'u' => self.unicode_escape()?,
                        _ => {
                            return Err(self.error_at("Invalid \\escape", self.at - 2));
                        }
                    };
                    push_python_char(code, &mut out);
                }
                c if (c as u32) < 0x20 => {
                    return Err(self.error_at("Invalid control character at", self.at - 1));
                }
                c => push_python_char(u32::from(c), &mut out),
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits: String = self.chars.get(self.at..self.at + 4)?.iter().collect();
        if !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        let code = u32::from_str_radix(&digits, 16).ok()?;
        self.at += 4;
        Some(code)
    }

    /// After `\u`: one code unit, or a surrogate pair combined into one character.
    fn unicode_escape(&mut self) -> Result<u32, PyJsonError> {
        let escape_at = self.at - 2;
        let Some(code) = self.hex4() else {
            return Err(self.error_at("Invalid \\uXXXX escape", escape_at + 1));
        };
        if (0xD800..=0xDBFF).contains(&code)
            && self.chars.get(self.at) == Some(&'\\')
            && self.chars.get(self.at + 1) == Some(&'u')
        {
            let saved = self.at;
            self.at += 2;
            match self.hex4() {
                Some(low) if (0xDC00..=0xDFFF).contains(&low) => {
                    return Ok(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00));
                }
                Some(_) => self.at = saved,
                None => {
                    return Err(self.error_at("Invalid \\uXXXX escape", saved + 1));
                }
            }
        }
        Ok(code)
    }

    fn object(&mut self, depth: usize) -> Result<PyValue, PyJsonError> {
        self.at += 1;
        let mut map = PyDict::new();
        self.skip_whitespace();
        if self.peek() == Some('}') {
            self.at += 1;
            return Ok(PyValue::Dict(map));
        }
        loop {
            if self.peek() != Some('"') {
                return Err(self.error("Expecting property name enclosed in double quotes"));
            }
            self.at += 1;
            let key = self.string()?;
            self.skip_whitespace();
            if self.peek() != Some(':') {
                return Err(self.error("Expecting ':' delimiter"));
            }
            self.at += 1;
            self.skip_whitespace();
            let value = self.value(depth + 1)?;
            // A dict keeps the first position of a repeated key and its last value.
            map.insert(key, value);
            self.skip_whitespace();
            match self.peek() {
                Some('}') => {
                    self.at += 1;
                    return Ok(PyValue::Dict(map));
                }
                Some(',') => {
                    self.at += 1;
                    self.skip_whitespace();
                }
                _ => return Err(self.error("Expecting ',' delimiter")),
            }
        }
    }

    fn list(&mut self, depth: usize) -> Result<PyValue, PyJsonError> {
        self.at += 1;
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(']') {
            self.at += 1;
            return Ok(PyValue::List(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            self.skip_whitespace();
            match self.peek() {
                Some(']') => {
                    self.at += 1;
                    return Ok(PyValue::List(items));
                }
                Some(',') => {
                    self.at += 1;
                    self.skip_whitespace();
                }
                _ => return Err(self.error("Expecting ',' delimiter")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pyjson::dumps;

    fn round(text: &str) -> String {
        dumps(&loads(text).unwrap_or_else(|e| panic!("{text}: {e}")))
    }

    /// What `json.dumps(json.loads(text))` gives in CPython 3.11 (documented behaviour of
    /// the `json` module: NaN/Infinity accepted and written, surrogate pairs combined, lone
    /// surrogates kept, last duplicate wins in the first position, `ensure_ascii`).
    #[test]
    fn loads_then_dumps_matches_python() {
        for (text, python) in [
            ("{}", "{}"),
            ("[]", "[]"),
            (" [1,2 , 3] ", "[1, 2, 3]"),
            (
                r#"{"a":{"b":[true,false,null]}}"#,
                r#"{"a": {"b": [true, false, null]}}"#,
            ),
            ("18446744073709551616", "18446744073709551616"),
            ("-0", "0"),
            ("-0.0", "-0.0"),
            ("1E400", "Infinity"),
            ("[NaN, Infinity, -Infinity]", "[NaN, Infinity, -Infinity]"),
            ("1.5e-7", "1.5e-07"),
            (r#""\ud83d\ude00""#, r#""\ud83d\ude00""#),
            ("\"\u{1F600}\"", r#""\ud83d\ude00""#),
            (r#""\ud800""#, r#""\ud800""#),
            (r#""\udc00\ud800x""#, r#""\udc00\ud800x""#),
            (r#""\ud800\u0041""#, r#""\ud800A""#),
            (r#""\/\b\f\n\r\t\"\\""#, r#""/\b\f\n\r\t\"\\""#),
            ("\"\u{7f}\u{e9}\"", r#""\u007f\u00e9""#),
            (r#"{"a": 1, "b": 2, "a": 3}"#, r#"{"a": 3, "b": 2}"#),
            (r#"{"\u0061": 1, "a": 2}"#, r#"{"a": 2}"#),
        ] {
            assert_eq!(round(text), python, "{text}");
        }
    }

    #[test]
    fn loads_refuses_what_python_refuses() {
        for text in [
            "",
            "\u{feff}{}",
            "{} x",
            "{}{}",
            "[1,]",
            r#"{"a":1,}"#,
            "01",
            "1.",
            "-",
            "+1",
            "nan",
            "-NaN",
            "\"a\nb\"",
            r#""\x""#,
            r#""\u12""#,
            "{'a': 1}",
            "[",
        ] {
            assert!(loads(text).is_err(), "{text:?} must be refused");
        }
        let long = "1".repeat(MAX_INT_DIGITS + 1);
        assert!(loads(&long).is_err());
        assert!(loads(&"1".repeat(MAX_INT_DIGITS)).is_ok());
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 2), "]".repeat(MAX_DEPTH + 2));
        assert!(loads(&deep).is_err());
    }
}
