//! The gate digest (CONTRACT.md C8): what a gate asks, bound into one value a respond
//! carries back, so an answer lands only on the gate the person saw.
//!
//! Version 1: `"sha256:"` followed by the lowercase hex SHA-256 of the UTF-8 bytes of the
//! JSON Canonicalization Scheme (RFC 8785) text of the array
//! `["gatehouse.gate.v1", id, revision, tool, tool_call_id, args]`: the gate's row id (a
//! string), its revision (an integer, 1 when written), its tool and call id (strings, or
//! `null` when the gate names none) and its arguments (any JSON, `null` when absent).
//! RFC 8785 sorts object keys by their UTF-16 code units, writes no whitespace, writes
//! strings as ECMAScript's `JSON.stringify` and numbers as ECMAScript writes a double
//! (`1.0` and `1E+0` are `1`), so neither key order, whitespace nor a number's spelling in
//! what was stored or shown changes the digest. A newer version changes the tag (and the
//! prefix if the hash changes); a reader compares digests as opaque text.
//!
//! The vectors every language checks: `tests/data/gate_digest.vectors.json`.

use sha2::{Digest, Sha256};

/// The version tag, the tuple's first element.
pub const GATE_DIGEST_TAG: &str = "gatehouse.gate.v1";

/// What a gate asks, as its digest covers it.
#[derive(Debug, Clone, PartialEq)]
pub struct GateDigestInput<'a> {
    /// The row id.
    pub id: &'a str,
    /// The gate's revision (1 when written; a change to what it asks moves it on).
    pub revision: i64,
    /// `data.request.tool`.
    pub tool: Option<&'a str>,
    /// `data.request.tool_call_id`.
    pub tool_call_id: Option<&'a str>,
    /// `data.request.args`.
    pub args: Option<&'a serde_json::Value>,
}

/// The RFC 8785 text the digest hashes (for an implementer comparing step by step).
///
/// ```
/// use gatehouse_wire::interaction::{gate_digest_material, GateDigestInput};
/// let args = serde_json::json!({"b": 1.0, "a": "x"});
/// let input = GateDigestInput { id: "g1", revision: 1, tool: Some("Bash"), tool_call_id: None, args: Some(&args) };
/// assert_eq!(gate_digest_material(&input), r#"["gatehouse.gate.v1","g1",1,"Bash",null,{"a":"x","b":1}]"#);
/// ```
pub fn gate_digest_material(input: &GateDigestInput<'_>) -> String {
    let tuple = serde_json::Value::Array(vec![
        serde_json::Value::String(GATE_DIGEST_TAG.to_string()),
        serde_json::Value::String(input.id.to_string()),
        serde_json::Value::from(input.revision),
        input
            .tool
            .map_or(serde_json::Value::Null, |t| t.to_string().into()),
        input
            .tool_call_id
            .map_or(serde_json::Value::Null, |c| c.to_string().into()),
        input.args.cloned().unwrap_or(serde_json::Value::Null),
    ]);
    crate::fingerprint::canonical_json(&tuple)
}

/// The gate digest, `sha256:<64 hex>`.
///
/// ```
/// use gatehouse_wire::interaction::{gate_digest, GateDigestInput};
/// let a = serde_json::json!({"command": "ls", "n": 1});
/// let b: serde_json::Value = serde_json::from_str(r#"{ "n" : 1.0, "command" : "ls" }"#).unwrap();
/// let input = |args| GateDigestInput { id: "g1", revision: 1, tool: Some("Bash"), tool_call_id: Some("c1"), args: Some(args) };
/// assert_eq!(gate_digest(&input(&a)), gate_digest(&input(&b)));
/// assert!(gate_digest(&input(&a)).starts_with("sha256:"));
/// ```
pub fn gate_digest(input: &GateDigestInput<'_>) -> String {
    let hash = Sha256::digest(gate_digest_material(input).as_bytes());
    format!("sha256:{}", hex::encode(hash))
}

impl super::row::SessionInteraction {
    /// The digest of this row as read (its id, `gate.revision` and `data.request`),
    /// computed here, not copied from `gate.digest`: what a respond sends back is what
    /// this client saw. `None` for a row without an id or a revision (an Agenta host's).
    pub fn computed_digest(&self) -> Option<String> {
        let id = self.id.as_deref()?;
        let revision = self.gate.as_ref()?.revision;
        let request = self.data.as_ref().and_then(|d| d.request.as_ref());
        Some(gate_digest(&GateDigestInput {
            id,
            revision,
            tool: request.and_then(|r| r.tool.as_deref()),
            tool_call_id: request.and_then(|r| r.tool_call_id.as_deref()),
            args: request.and_then(|r| r.args.as_ref()),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared vectors: every language's suite checks these through its binding.
    const VECTORS: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/gate_digest.vectors.json"
    );

    /// (name, id, revision, tool, tool_call_id, args as JSON text).
    type Case = (
        &'static str,
        &'static str,
        i64,
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static str>,
    );

    /// The cases the vectors are made of: args as stored or shown text (key order,
    /// whitespace, number spellings, escapes, non-ASCII), absent parts, big revisions.
    fn cases() -> Vec<Case> {
        vec![
            (
                "plain",
                "019fac94-0000-7000-8000-000000000001",
                1,
                Some("Bash"),
                Some("toolu_01"),
                Some(r#"{"command":"ls"}"#),
            ),
            (
                "keys out of order and whitespace",
                "019fac94-0000-7000-8000-000000000001",
                1,
                Some("Bash"),
                Some("toolu_01"),
                Some("{ \"z\" : 1,\n  \"a\" : [ 1 , 2 ] , \"m\" : {\"y\": null, \"b\": true} }"),
            ),
            (
                "same keys sorted",
                "019fac94-0000-7000-8000-000000000001",
                1,
                Some("Bash"),
                Some("toolu_01"),
                Some(r#"{"a":[1,2],"m":{"b":true,"y":null},"z":1}"#),
            ),
            (
                "number spellings",
                "g-2",
                3,
                Some("calc"),
                Some("c2"),
                Some(
                    r#"{"a":1.0,"b":1E+2,"c":-0,"d":0.000001,"e":1e21,"f":1.5e-7,"g":9007199254740993,"h":123.456}"#,
                ),
            ),
            (
                "pydantic spellings of the same numbers",
                "g-2",
                3,
                Some("calc"),
                Some("c2"),
                Some(
                    r#"{"a":1.0,"b":100.0,"c":0,"d":0.000001,"e":1e+21,"f":1.5e-7,"g":9007199254740993,"h":123.456}"#,
                ),
            ),
            (
                "escapes and non-ASCII",
                "g-3",
                1,
                Some("Write"),
                Some("c3"),
                Some(
                    r#"{"path":"/tmp/\u00e9t\u00e9.txt","text":"line\nnext\t\"q\" \\ \u0001 \u2028 😀","é":"x","ä":"y","a":"z"}"#,
                ),
            ),
            (
                "UTF-16 key order",
                "g-4",
                1,
                Some("t"),
                None,
                Some(r#"{"\ud83d\ude00":1,"\uffff":2,"a":3,"A":4,"":5}"#),
            ),
            (
                "no call id",
                "g-5",
                1,
                Some("Read"),
                None,
                Some(r#"{"file":"README.md"}"#),
            ),
            ("no arguments", "g-6", 1, Some("Stop"), Some("c6"), None),
            ("nothing asked", "g-7", 1, None, None, None),
            (
                "arguments not an object",
                "g-8",
                2,
                Some("echo"),
                Some("c8"),
                Some(r#"["a", 1, [], {}]"#),
            ),
            (
                "revision moved on",
                "019fac94-0000-7000-8000-000000000001",
                2,
                Some("Bash"),
                Some("toolu_01"),
                Some(r#"{"command":"ls"}"#),
            ),
            (
                "other id",
                "019fac94-0000-7000-8000-000000000002",
                1,
                Some("Bash"),
                Some("toolu_01"),
                Some(r#"{"command":"ls"}"#),
            ),
            (
                "big revision",
                "g-9",
                9007199254740991,
                Some("Bash"),
                Some("c9"),
                Some("{}"),
            ),
        ]
    }

    fn vector(case: &Case) -> serde_json::Value {
        let (name, id, revision, tool, call, args_json) = *case;
        let args: Option<serde_json::Value> =
            args_json.map(|text| serde_json::from_str(text).expect("a vector's args are JSON"));
        let input = GateDigestInput {
            id,
            revision,
            tool,
            tool_call_id: call,
            args: args.as_ref(),
        };
        serde_json::json!({
            "name": name, "id": id, "revision": revision, "tool": tool, "tool_call_id": call,
            "args_json": args_json, "material": gate_digest_material(&input), "digest": gate_digest(&input),
        })
    }

    /// The committed file is what this code computes: `GATEHOUSE_WRITE_VECTORS=1` rewrites it.
    #[test]
    fn the_committed_vectors_are_what_the_digest_computes() {
        let vectors: Vec<serde_json::Value> = cases().iter().map(vector).collect();
        let document = serde_json::json!({
            "about": "Gate digest v1 (docs/CONTRACT.md C8): for each vector, the digest of (id, revision, tool, tool_call_id, args read from args_json). Checked by gatehouse-wire's tests and by the Kotlin, Swift and Python suites through their binding.",
            "tag": GATE_DIGEST_TAG,
            "vectors": vectors,
        });
        let text = format!(
            "{}\n",
            serde_json::to_string_pretty(&document).expect("JSON")
        );
        if std::env::var_os("GATEHOUSE_WRITE_VECTORS").is_some() {
            std::fs::write(VECTORS, &text).expect("write the vectors");
        }
        let committed =
            std::fs::read_to_string(VECTORS).expect("tests/data/gate_digest.vectors.json");
        assert_eq!(
            committed, text,
            "stale vectors: GATEHOUSE_WRITE_VECTORS=1 cargo test -p gatehouse-wire digest"
        );
    }

    #[test]
    fn spelling_and_order_do_not_change_a_digest_and_each_bound_part_does() {
        let digests: std::collections::HashMap<&str, String> = cases()
            .iter()
            .map(|case| {
                (
                    case.0,
                    vector(case)["digest"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                )
            })
            .collect();
        assert_eq!(
            digests["keys out of order and whitespace"],
            digests["same keys sorted"]
        );
        assert_eq!(
            digests["number spellings"],
            digests["pydantic spellings of the same numbers"]
        );
        for other in ["revision moved on", "other id"] {
            assert_ne!(digests["plain"], digests[other], "{other}");
        }
        assert!(digests
            .values()
            .all(|d| d.len() == 7 + 64 && d.starts_with("sha256:")));
    }
}
