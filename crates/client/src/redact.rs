//! Bounding and redaction of every server text an [`Error`](crate::Error) keeps:
//! lengths are capped, values under sensitive JSON keys are replaced, and the
//! configured secrets (API key, runner token) are scrubbed.

/// Longest server detail kept in an error, in characters.
pub(crate) const MAX_DETAIL_CHARS: usize = 512;
/// Longest raw-body snippet kept in an error, in characters.
pub(crate) const MAX_SNIPPET_CHARS: usize = 256;

/// Keys whose values are never kept in an error snippet.
const REDACTED_KEYS: &[&str] = &[
    "parameters",
    "effectiveparameters",
    "args",
    "input",
    "headers",
    "authorization",
    "credentials",
    "api_key",
    "apikey",
    "token",
    "password",
    "secret",
    "value",
];

/// At most `max` characters of `text`, with an ellipsis when cut.
pub(crate) fn bound_chars(text: &str, max: usize) -> String {
    let mut out: String = text.chars().take(max).collect();
    if text.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

/// A bounded, printable snippet of raw bytes.
pub(crate) fn snippet(body: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(body);
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_control() && c != ' ' { ' ' } else { c })
        .collect();
    let collapsed = cleaned.split_whitespace().collect::<Vec<_>>().join(" ");
    bound_chars(&collapsed, max)
}

/// A bounded snippet of a body; when it is JSON, sensitive values are replaced first.
pub(crate) fn redacted_snippet(body: &[u8], max: usize) -> String {
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(mut value) => {
            redact_value(&mut value);
            bound_chars(&value.to_string(), max)
        }
        Err(_) => snippet(body, max),
    }
}

fn redact_value(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, inner) in map.iter_mut() {
                if REDACTED_KEYS.contains(&key.to_ascii_lowercase().as_str()) {
                    *inner = serde_json::Value::String("[redacted]".to_string());
                } else {
                    redact_value(inner);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(redact_value),
        _ => {}
    }
}

/// serde's messages quote offending string values (`invalid type: string "..."`);
/// keep the shape of the message, not the value.
pub(crate) fn scrub_quoted_values(reason: &str) -> String {
    let mut out = String::with_capacity(reason.len());
    let mut rest = reason;
    while let Some(start) = rest.find('"') {
        out.push_str(&rest[..=start]);
        let after = &rest[start + 1..];
        match after.find('"') {
            Some(end) => {
                out.push('…');
                out.push('"');
                rest = &after[end + 1..];
            }
            None => {
                out.push('…');
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Secrets at least this long are scrubbed wherever they occur, even glued to other
/// text; shorter ones only where they stand as a whole word (else a key `k` would turn
/// "unknown" into "un[redacted]nown").
const SCRUB_ANYWHERE_CHARS: usize = 8;

/// Remove the API key and runner token (and any other configured secret) from a text:
/// a hostile server may echo the header. A secret of [`SCRUB_ANYWHERE_CHARS`] or more is
/// replaced wherever it occurs; a shorter one where it is not part of a longer word
/// (letters, digits or `_` on either side), so ordinary words are never mangled.
pub(crate) fn scrub_secret(text: &str, secrets: &[String]) -> String {
    secrets
        .iter()
        .filter(|s| !s.is_empty())
        .fold(text.to_string(), |acc, secret| {
            if secret.chars().count() >= SCRUB_ANYWHERE_CHARS {
                acc.replace(secret.as_str(), "[redacted]")
            } else {
                replace_whole_words(&acc, secret)
            }
        })
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `text` with every occurrence of `secret` that is not inside a longer word replaced.
fn replace_whole_words(text: &str, secret: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut before: Option<char> = None;
    while let Some(at) = rest.find(secret) {
        let prefix = &rest[..at];
        let previous = prefix.chars().next_back().or(before);
        let after = &rest[at + secret.len()..];
        let next = after.chars().next();
        out.push_str(prefix);
        let glued = secret.chars().next().is_some_and(is_word_char)
            && previous.is_some_and(is_word_char)
            || secret.chars().next_back().is_some_and(is_word_char)
                && next.is_some_and(is_word_char);
        if glued {
            // Keep the first character and look again after it (occurrences may overlap).
            let first = secret.chars().next().map(char::len_utf8).unwrap_or(1);
            out.push_str(&rest[at..at + first]);
            before = rest[..at + first].chars().next_back();
            rest = &rest[at + first..];
        } else {
            out.push_str("[redacted]");
            before = secret.chars().next_back();
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_redact_sensitive_values_and_the_key() {
        let body =
            br#"{"detail":"boom","parameters":{"agent":{"secret":"hunter2"}},"echo":"key-123"}"#;
        let text = redacted_snippet(body, 1000);
        assert!(!text.contains("hunter2"), "{text}");
        let text = scrub_secret(&text, &["key-123".to_string()]);
        assert!(!text.contains("key-123"), "{text}");
        assert_eq!(
            scrub_quoted_values(r#"invalid type: string "sk-live", expected u64"#),
            r#"invalid type: string "…", expected u64"#
        );
    }

    #[test]
    fn short_secrets_are_scrubbed_as_words_without_mangling_text() {
        let k = vec!["k".to_string()];
        assert_eq!(
            scrub_secret("unknown variant `kk`, key k", &k),
            "unknown variant `kk`, key [redacted]"
        );
        assert_eq!(scrub_secret("Bearer k", &k), "Bearer [redacted]");
        assert_eq!(scrub_secret("k", &k), "[redacted]");
        assert_eq!(
            scrub_secret("\"k\":k-k", &k),
            "\"[redacted]\":[redacted]-[redacted]"
        );
        let short = vec!["s3cr".to_string()];
        assert_eq!(
            scrub_secret("as3cr s3cr s3crs", &short),
            "as3cr [redacted] s3crs"
        );
        // Overlapping occurrences: "aa" in "aaa" is glued every time; alone it is hidden.
        let aa = vec!["aa".to_string()];
        assert_eq!(scrub_secret("aaa aa", &aa), "aaa [redacted]");
        // A non-word secret is hidden wherever it occurs.
        let punct = vec!["-+-".to_string()];
        assert_eq!(scrub_secret("a-+-b", &punct), "a[redacted]b");
        // Long secrets are hidden even when glued to other text.
        let long = vec!["gh_live_0123".to_string()];
        assert_eq!(
            scrub_secret("xgh_live_0123y and gh_live_0123", &long),
            "x[redacted]y and [redacted]"
        );
        assert_eq!(
            scrub_secret("naïve ünknown k", &k),
            "naïve ünknown [redacted]"
        );
    }
}
