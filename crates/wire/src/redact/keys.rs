//! What names and texts hold a secret, whatever their place in a config: credential-shaped
//! keys and the secret parts of a URL (C2, Gatehouse's default redaction).

/// C2, by rule (Gatehouse's default redaction, beyond Agenta's): a key that names a
/// credential, anywhere in the config. Compared on its letters and digits, lowercased
/// (`api_key`, `apiKey`, `X-Api-Key` are one name): `headers`, `authorization`,
/// `cookie`, `password`/`passwd`, or a name ending in `token`, `secret`, `password`,
/// `apikey`, `privatekey` (the tokenizer's special tokens, `eos_token` and the like, are
/// not credentials).
///
/// ```
/// use gatehouse_wire::redact::is_credential_shaped_key;
/// for key in ["api_key", "apiKey", "X-Api-Key", "NOTION_TOKEN", "client_secret", "Authorization"] {
///     assert!(is_credential_shaped_key(key), "{key}");
/// }
/// for key in ["max_tokens", "eos_token", "model", "tokenizer", "description"] {
///     assert!(!is_credential_shaped_key(key), "{key}");
/// }
/// ```
pub fn is_credential_shaped_key(key: &str) -> bool {
    // Only a name's last 13 letters and digits can decide (the longest name compared is
    // `authorization`): gather them backwards, lowercased, and stop.
    const LONGEST: usize = 13;
    // Every name compared ends in one of these five letters and digits: most keys stop
    // here, after a look at their last five bytes.
    const fn pack(tail: &[u8; 5]) -> u64 {
        (tail[0] as u64) << 32
            | (tail[1] as u64) << 24
            | (tail[2] as u64) << 16
            | (tail[3] as u64) << 8
            | tail[4] as u64
    }
    const TAILS: [u64; 9] = [
        pack(b"token"),
        pack(b"ecret"),
        pack(b"sword"),
        pack(b"asswd"),
        pack(b"pikey"),
        pack(b"tekey"),
        pack(b"aders"),
        pack(b"ation"),
        pack(b"ookie"),
    ];
    let bytes = key.as_bytes();
    // Cheapest first: a credential name's last two letters are one of eight pairs.
    if let [.., a, b] = bytes {
        if b.is_ascii_alphanumeric() && a.is_ascii_alphanumeric() {
            let pair = [a | 0x20, b | 0x20];
            if !matches!(
                &pair,
                b"en" | b"et" | b"rd" | b"wd" | b"ey" | b"rs" | b"on" | b"ie"
            ) {
                return false;
            }
        }
    }
    let tail = match bytes.len().checked_sub(5).map(|at| &bytes[at..]) {
        // The common case: the last five bytes are letters and digits (lowercased by
        // setting 0x20, which digits already have).
        Some(tail) if tail.iter().all(u8::is_ascii_alphanumeric) => tail
            .iter()
            .fold(0u64, |word, byte| (word << 8) | u64::from(byte | 0x20)),
        _ => {
            let mut word = 0u64;
            let mut seen = 0;
            for byte in bytes
                .iter()
                .rev()
                .filter(|b| b.is_ascii_alphanumeric())
                .take(5)
            {
                word |= u64::from(byte | 0x20) << (8 * seen);
                seen += 1;
            }
            if seen < 5 {
                return false;
            }
            word
        }
    };
    if !TAILS.contains(&tail) {
        return false;
    }
    let mut tail = [0u8; LONGEST];
    let mut len = 0;
    let mut longer = false;
    for byte in key.bytes().rev().filter(u8::is_ascii_alphanumeric) {
        if len == LONGEST {
            longer = true;
            break;
        }
        tail[LONGEST - 1 - len] = byte.to_ascii_lowercase();
        len += 1;
    }
    let name = &tail[LONGEST - len..];
    const EXACT: [&[u8]; 5] = [
        b"headers",
        b"authorization",
        b"cookie",
        b"password",
        b"passwd",
    ];
    const SUFFIXES: [&[u8]; 5] = [b"token", b"secret", b"password", b"apikey", b"privatekey"];
    const SPECIAL_TOKENS: [&[u8]; 8] = [
        b"eostoken",
        b"bostoken",
        b"padtoken",
        b"unktoken",
        b"septoken",
        b"clstoken",
        b"masktoken",
        b"stoptoken",
    ];
    (!longer && EXACT.contains(&name))
        || (SUFFIXES.iter().any(|suffix| name.ends_with(suffix))
            && (longer || !SPECIAL_TOKENS.contains(&name)))
}

/// Query parameters of a URL that carry a secret: a credential-shaped name (see
/// [`is_credential_shaped_key`]), or one of the short names signed URLs use.
fn is_secret_query_name(name: &str) -> bool {
    is_credential_shaped_key(name)
        || [
            "key",
            "sig",
            "signature",
            "auth",
            "access_key",
            "x-amz-signature",
        ]
        .iter()
        .any(|short| name.eq_ignore_ascii_case(short))
}

/// `text` without its secret-looking query parameters (and without a password in its
/// user-info), when it is an http(s)/ws(s) URL holding any; `None` when nothing changes.
///
/// ```
/// use gatehouse_wire::redact::strip_url_secrets;
/// assert_eq!(
///     strip_url_secrets("https://mcp.example/sse?token=sk-1&region=eu").as_deref(),
///     Some("https://mcp.example/sse?region=eu")
/// );
/// assert_eq!(strip_url_secrets("https://mcp.example/sse?region=eu"), None);
/// assert_eq!(strip_url_secrets("not a url ?token=x"), None);
/// ```
pub fn strip_url_secrets(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    if !matches!(bytes.first(), Some(b'h' | b'H' | b'w' | b'W')) {
        return None;
    }
    let has_scheme = |scheme: &str| {
        bytes.len() > scheme.len() && bytes[..scheme.len()].eq_ignore_ascii_case(scheme.as_bytes())
    };
    if !(has_scheme("http://")
        || has_scheme("https://")
        || has_scheme("ws://")
        || has_scheme("wss://"))
        || !bytes.iter().any(|b| *b == b'?' || *b == b'@')
    {
        return None;
    }
    let scheme_end = text.find("://")? + 3;
    let (before_fragment, fragment) = match text.find('#') {
        Some(at) => (&text[..at], &text[at..]),
        None => (text, ""),
    };
    let (base, query) = match before_fragment.find('?') {
        Some(at) => (&before_fragment[..at], Some(&before_fragment[at + 1..])),
        None => (before_fragment, None),
    };
    let mut changed = false;
    // user:password@host -> user@host
    let authority_end = base[scheme_end..]
        .find('/')
        .map(|i| scheme_end + i)
        .unwrap_or(base.len());
    let authority = &base[scheme_end..authority_end];
    let base = match authority.rfind('@') {
        Some(at) if authority[..at].contains(':') => {
            changed = true;
            let user = &authority[..at];
            let user = &user[..user.find(':').unwrap_or(user.len())];
            format!(
                "{}{user}@{}{}",
                &base[..scheme_end],
                &authority[at + 1..],
                &base[authority_end..]
            )
        }
        _ => base.to_string(),
    };
    let query = query.map(|query| {
        let kept: Vec<&str> = query
            .split('&')
            .filter(|pair| {
                let name = pair.split('=').next().unwrap_or("");
                let secret = !name.is_empty() && is_secret_query_name(name);
                changed |= secret;
                !secret
            })
            .collect();
        kept.join("&")
    });
    if !changed {
        return None;
    }
    let mut out = base;
    if let Some(query) = query.filter(|q| !q.is_empty()) {
        out.push('?');
        out.push_str(&query);
    }
    out.push_str(fragment);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_loses_only_its_secrets() {
        for (url, expected) in [
            ("https://h/p?sig=1&x=2#frag", Some("https://h/p?x=2#frag")),
            ("https://user:pw@h/p", Some("https://user@h/p")),
            ("https://h/p?api_key=1", Some("https://h/p")),
            ("HTTPS://h/p?X-Amz-Signature=1&a=b", Some("HTTPS://h/p?a=b")),
            ("https://h/p?page=2", None),
            ("ftp://h/p?token=1", None),
            ("https://h/p", None),
        ] {
            assert_eq!(strip_url_secrets(url).as_deref(), expected, "{url}");
        }
    }
}
