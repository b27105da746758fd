//! The tolerant readers: Python's `json.loads` (CPython's scanner, its error messages and
//! offsets, its limits) and JavaScript's `JSON.parse` (what Agenta's runner reads a `/run`
//! body with). Both make the same [`PyValue`]: they differ only in what they accept
//! ([`Dialect`]).
//!
//! The reader is iterative (an explicit stack of open containers, never recursion), so no
//! input can overflow the thread's stack while it is read; nesting is bounded by
//! [`Dialect::max_depth`] as a rule of the dialect, not as a guard of the reader.

use super::value::{push_python_char, PyDict, PyValue};
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

/// The deepest nesting of arrays and objects Python's reading accepts where Agenta's SDK
/// stamps: CPython 3.11's recursion limit is 1000 frames, and `json.loads` and `json.dumps`
/// each count one per open container on top of the frames of their callers. Called from the
/// top of a script (as Agenta's SDK stamps a config it read), 993 nested containers are read,
/// stamped and written, and 994 raise `RecursionError` (measured on CPython 3.11.7, both with
/// `json.loads` and with `json.dumps` of 0.125.1's `stamp_effective_parameters`).
pub const MAX_DEPTH: usize = 993;

/// The deepest nesting of arrays and objects the JavaScript reading accepts. `JSON.parse`
/// itself has no limit in Node 20, but the runner's `canonicalJson` recurses per level and
/// overflows Node's default stack at about 2050 levels, so no deeper body is hashed; this
/// bound keeps every body the runner hashes and bounds the typed conversion after it.
pub const JS_MAX_DEPTH: usize = 2048;

/// Which parser's rules a text is read by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// Python's `json.loads`: `NaN`, `Infinity` and `-Infinity` are values; an integer has
    /// at most [`MAX_INT_DIGITS`] digits; at most [`MAX_DEPTH`] levels.
    Python,
    /// JavaScript's `JSON.parse`: standard JSON numbers only (no `NaN` or `Infinity` token),
    /// of any length; at most [`JS_MAX_DEPTH`] levels.
    JavaScript,
}

impl Dialect {
    /// The deepest nesting of arrays and objects this dialect reads.
    pub fn max_depth(self) -> usize {
        match self {
            Self::Python => MAX_DEPTH,
            Self::JavaScript => JS_MAX_DEPTH,
        }
    }
}

/// Python's `json.loads(text)`.
pub fn loads(text: &str) -> Result<PyValue, PyJsonError> {
    read(text, Dialect::Python)
}

/// JavaScript's `JSON.parse(text)`: the same value model as [`loads`] (a lone surrogate
/// kept, the last of duplicate keys at the first one's position), without Python's
/// extensions. (`JSON.parse` lists integer-like keys first when an object is enumerated;
/// the order kept here is the text's, which is what a sorted hash or a typed reading sees.)
pub fn parse_js(text: &str) -> Result<PyValue, PyJsonError> {
    read(text, Dialect::JavaScript)
}

/// Read `text` as `dialect` reads it.
pub fn read(text: &str, dialect: Dialect) -> Result<PyValue, PyJsonError> {
    let chars: Vec<char> = text.chars().collect();
    let mut parser = Parser {
        chars,
        at: 0,
        dialect,
    };
    if parser.peek() == Some('\u{feff}') {
        return Err(parser.error_at("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0));
    }
    parser.skip_whitespace();
    let value = parser.document()?;
    parser.skip_whitespace();
    if parser.at != parser.chars.len() {
        return Err(parser.error("Extra data"));
    }
    Ok(value)
}

/// An open container while the reader is inside it.
enum Open {
    List(Vec<PyValue>),
    /// The dict so far and the key whose value is being read.
    Dict(PyDict, String),
}

/// What a container's opening bracket started.
enum Start {
    /// A complete value (a scalar, or an empty container).
    Value(PyValue),
    /// A container with at least one item, now open.
    Open(Open),
}

struct Parser {
    chars: Vec<char>,
    at: usize,
    dialect: Dialect,
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

    /// One whole value (no leading whitespace), read with an explicit stack of the
    /// containers open around the current position.
    fn document(&mut self) -> Result<PyValue, PyJsonError> {
        let mut open: Vec<Open> = Vec::new();
        loop {
            let mut value = match self.start(open.len())? {
                Start::Open(container) => {
                    open.push(container);
                    continue;
                }
                Start::Value(value) => value,
            };
            // Put the finished value into its container; close every container that ends
            // here; stop at the next item to read (or return the document).
            loop {
                let Some(container) = open.last_mut() else {
                    return Ok(value);
                };
                self.skip_whitespace();
                let closed = match container {
                    Open::List(items) => {
                        items.push(value);
                        match self.peek() {
                            Some(']') => true,
                            Some(',') => {
                                self.at += 1;
                                self.skip_whitespace();
                                false
                            }
                            _ => return Err(self.error("Expecting ',' delimiter")),
                        }
                    }
                    Open::Dict(map, key) => {
                        // A dict keeps the first position of a repeated key and its last value.
                        map.insert(std::mem::take(key), value);
                        match self.peek() {
                            Some('}') => true,
                            Some(',') => {
                                self.at += 1;
                                self.skip_whitespace();
                                *key = self.key()?;
                                false
                            }
                            _ => return Err(self.error("Expecting ',' delimiter")),
                        }
                    }
                };
                if !closed {
                    break;
                }
                self.at += 1;
                value = match open.pop() {
                    Some(Open::List(items)) => PyValue::List(items),
                    Some(Open::Dict(map, _)) => PyValue::Dict(map),
                    // `open.last_mut()` was `Some` just above.
                    None => return Err(self.error("Expecting value")),
                };
            }
        }
    }

    /// The start of a value at the current position, inside `depth` open containers.
    fn start(&mut self, depth: usize) -> Result<Start, PyJsonError> {
        let Some(c) = self.peek() else {
            return Err(self.error("Expecting value"));
        };
        let python = self.dialect == Dialect::Python;
        let scalar = match c {
            '"' => {
                self.at += 1;
                PyValue::Str(self.string()?)
            }
            '{' | '[' => {
                if depth >= self.dialect.max_depth() {
                    return Err(self.error("maximum recursion depth exceeded"));
                }
                self.at += 1;
                self.skip_whitespace();
                return if c == '[' {
                    if self.peek() == Some(']') {
                        self.at += 1;
                        Ok(Start::Value(PyValue::List(Vec::new())))
                    } else {
                        Ok(Start::Open(Open::List(Vec::new())))
                    }
                } else if self.peek() == Some('}') {
                    self.at += 1;
                    Ok(Start::Value(PyValue::Dict(PyDict::new())))
                } else {
                    let key = self.key()?;
                    Ok(Start::Open(Open::Dict(PyDict::new(), key)))
                };
            }
            'n' if self.starts_with("null") => {
                self.at += 4;
                PyValue::Null
            }
            't' if self.starts_with("true") => {
                self.at += 4;
                PyValue::Bool(true)
            }
            'f' if self.starts_with("false") => {
                self.at += 5;
                PyValue::Bool(false)
            }
            'N' if python && self.starts_with("NaN") => {
                self.at += 3;
                PyValue::Number("NaN".into())
            }
            'I' if python && self.starts_with("Infinity") => {
                self.at += 8;
                PyValue::Number("Infinity".into())
            }
            '-' if python && self.starts_with("-Infinity") => {
                self.at += 9;
                PyValue::Number("-Infinity".into())
            }
            '-' | '0'..='9' => self.number()?,
            _ => return Err(self.error("Expecting value")),
        };
        Ok(Start::Value(scalar))
    }

    /// A key and its `:` (the position is at the key's opening quote, whitespace skipped),
    /// leaving the position at the value.
    fn key(&mut self) -> Result<String, PyJsonError> {
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
        Ok(key)
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
        if self.dialect == Dialect::Python && !is_float && int_digits > MAX_INT_DIGITS {
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
    }

    fn nested_lists(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    fn nested_dicts(depth: usize) -> String {
        format!("{}1{}", "{\"a\": ".repeat(depth), "}".repeat(depth))
    }

    /// JavaScript's reading: no `NaN` or `Infinity` token, integers of any length, the
    /// same model as Python's otherwise (lone surrogates, the last duplicate).
    #[test]
    fn parse_js_reads_what_json_parse_reads() {
        for text in ["NaN", "[Infinity]", "-Infinity", "{\"a\": NaN}"] {
            assert!(parse_js(text).is_err(), "{text}");
            assert!(loads(text).is_ok(), "{text}");
        }
        let long = "7".repeat(MAX_INT_DIGITS + 1);
        assert_eq!(parse_js(&long), Ok(PyValue::Number(long.clone())));
        let text = r#"{"a": "\ud800", "\udc00": 1, "a": "\ud83d\ude00", "b": 1E400}"#;
        assert_eq!(parse_js(text), loads(text));
        assert_eq!(
            dumps(&parse_js(text).unwrap()),
            r#"{"a": "\ud83d\ude00", "\udc00": 1, "b": Infinity}"#
        );
    }

    /// Python's bound is its own (993 nested containers read and stamped where Agenta's SDK
    /// stamps, 994 refused), JavaScript's the runner's; the reader itself is iterative, so
    /// a deeper input is refused at the bound whatever its depth. What recurses after it
    /// (`dumps`, the redaction, the canonical JSON, the drop) is bounded by the dialect's
    /// depth: at the bound it all runs here on a thread with a 1 MiB stack in an
    /// unoptimized build (half a tokio worker's 2 MiB).
    #[test]
    fn nesting_is_bounded_by_the_dialect_and_never_by_the_stack() {
        let worker = std::thread::Builder::new()
            .stack_size(1024 * 1024)
            .spawn(|| {
                for deep in [nested_lists(MAX_DEPTH), nested_dicts(MAX_DEPTH)] {
                    let value = loads(&deep).unwrap();
                    assert_eq!(dumps(&value), deep);
                    if deep.starts_with('{') {
                        for redaction in [
                            crate::redact::Redaction::AgentaCompatible,
                            crate::redact::Redaction::Gatehouse,
                        ] {
                            let policy = crate::effective::StampPolicy {
                                max_bytes: usize::MAX,
                                redaction,
                            };
                            let stamped =
                                crate::effective::stamp_python_text(&deep, &policy).unwrap();
                            assert_eq!(stamped.text, deep);
                        }
                    }
                }
                for too_deep in [nested_lists(MAX_DEPTH + 1), nested_dicts(MAX_DEPTH + 1)] {
                    let err = loads(&too_deep).unwrap_err();
                    assert_eq!(err.message, "maximum recursion depth exceeded");
                    assert_eq!(
                        err.position,
                        MAX_DEPTH * (too_deep.find('[').map_or(6, |_| 1))
                    );
                }
                let runner_deep = parse_js(&nested_lists(JS_MAX_DEPTH)).unwrap();
                assert_eq!(
                    crate::fingerprint::canonical_json_of(&runner_deep),
                    nested_lists(JS_MAX_DEPTH)
                );
                assert!(parse_js(&nested_lists(JS_MAX_DEPTH + 1)).is_err());
                // Far past every bound: refused at the bound, nothing else read.
                let huge = nested_lists(1_000_000);
                assert!(loads(&huge).is_err());
                assert!(parse_js(&huge).is_err());
            })
            .unwrap();
        worker.join().unwrap();
    }
}
