//! No secret at rest: nothing the redaction strips from a config reaches the database,
//! whatever path the config takes (stamped gate row, parked turn over the stamp cap,
//! committed revision, idempotent answer, resumed turn), and a parked state an older
//! version stored unredacted is scrubbed at startup.

use std::collections::BTreeSet;

use crate::common::db::Db;
use crate::common::{user, Harness};
use gatehouse_server::testing::TestServerOptions;
use gatehouse_wire::redact::{redact_effective_parameters, Redaction};
use serde_json::{json, Value};

/// A gated config carrying credential-shaped values everywhere the issue found them.
/// Every string is a unique marker, so each can be looked for in the database.
fn secret_config(model: &str, pad: usize) -> Value {
    json!({"agent": {
        "llm": {"model": model, "api_key": "SEKRETllmapikey01"},
        "runner": {"permissions": {"default": "ask"}},
        "instructions": "p".repeat(pad),
        "mcps": [{
            "name": "notion",
            "headers": {"X-Api-Key": "SEKRETmcpheader02"},
            "env": {"NOTION_TOKEN": "SEKRETmcpenv03"},
            "connection": {
                "url": "https://mcp.example/sse?token=SEKRETquerytoken04",
                "headers": {"Authorization": "Bearer SEKRETconnheader05"},
                "transport": {"headers": {"Authorization": "Bearer SEKRETtransport06"}}
            },
            "credentials": {"header_secret_refs": {"Authorization": "vault:notion-key"}}
        }],
        "tools": [{
            "name": "search",
            "call": {"method": "POST", "path": "/api/search", "authorization": "Bearer SEKRETcallauth07"},
            "Authorization": "Bearer SEKRETtoolauth08",
            "credentials": {"value": "SEKRETcredvalue09"},
            "inputSchema": {"type": "object", "properties": {"headers": {"type": "object"}}}
        }],
        "skills": [{"name": "s", "headers": {"Authorization": "Bearer SEKRETskill10"}}]
    }})
}

fn string_leaves(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::String(s) => {
            out.insert(s.clone());
        }
        Value::Array(items) => items.iter().for_each(|v| string_leaves(v, out)),
        Value::Object(map) => map.values().for_each(|v| string_leaves(v, out)),
        _ => {}
    }
}

/// The values the server's redaction strips from `config` (it decides what a secret is;
/// this test holds the server to keeping none of them).
fn stripped_values(config: &Value) -> BTreeSet<String> {
    let mut before = BTreeSet::new();
    string_leaves(config, &mut before);
    let (redacted, _) =
        redact_effective_parameters(config.as_object().unwrap().clone(), Redaction::Gatehouse);
    let mut after = BTreeSet::new();
    string_leaves(&Value::Object(redacted), &mut after);
    before.difference(&after).cloned().collect()
}

#[tokio::test]
async fn nothing_the_redaction_strips_is_stored() {
    let h = Harness::legacy().await;
    let small = secret_config("m-small", 10);
    let big = secret_config("m-big", 70 * 1024);
    let stripped = stripped_values(&small);
    // Every credential-shaped value of the config is stripped (C2, by rule): the
    // contract's headers and authorizations, an API key, MCP env, a token in a URL, an
    // inline credential value, transport and skill headers. The vault references stay.
    let mut leaves = BTreeSet::new();
    string_leaves(&small, &mut leaves);
    for secret in leaves.iter().filter(|s| s.contains("SEKRET")) {
        assert!(
            stripped
                .iter()
                .any(|v| v.contains("SEKRET") && v.contains(secret.trim_start_matches("Bearer "))),
            "{secret} is not stripped: {stripped:?}"
        );
    }
    assert_eq!(
        stripped.iter().filter(|v| v.contains("SEKRET")).count(),
        10,
        "{stripped:?}"
    );
    assert!(
        !stripped.contains("vault:notion-key"),
        "a secret reference stays"
    );

    // A stamped gate, a gate over the stamp cap (parked config only), a revision.
    let mut gates = Vec::new();
    for (session, parameters) in [("small", &small), ("big", &big)] {
        let parked = h
            .invoke(json!({
                "session_id": session,
                "data": {"inputs": {"messages": user("go")}, "parameters": parameters}
            }))
            .await;
        assert_eq!(parked["status"], "parked", "{parked}");
        gates.push(parked["interaction_ids"][0].as_str().unwrap().to_string());
    }
    let (status, body) = h
        .post(
            "/api/workflows/revisions/commit",
            json!({"workflow": {"slug": "secret-wf"}, "variant": {"slug": "secret-wf.default"}, "parameters": small}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let from_revision = h
        .invoke(json!({
            "session_id": "revision",
            "references": {"workflow_revision": {"id": body["revision"]["id"]}},
            "data": {"inputs": {"messages": user("go")}}
        }))
        .await;
    assert_eq!(from_revision["status"], "parked", "{from_revision}");
    gates.push(
        from_revision["interaction_ids"][0]
            .as_str()
            .unwrap()
            .to_string(),
    );

    // Answer them (one idempotently: its stored answer is a row too); the resumes park again.
    for (i, gate) in gates.iter().enumerate() {
        let (status, body) = h
            .post_with_key(
                &format!("/api/sessions/interactions/{gate}/respond"),
                json!({"answer": {"approved": true}}),
                &format!("secret-key-{i}"),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        h.wait_resolved(gate).await;
    }
    for session in ["small", "big", "revision"] {
        let turns = h.turns(session).await;
        assert_eq!(turns["count"], 2, "{turns}");
    }

    let db = Db::open(&h.server).await;
    let everything = db.everything().await;
    db.close().await;
    assert!(everything.contains("m-big") && everything.contains("vault:notion-key"));
    for secret in &stripped {
        // Look for the distinctive part (JSON escaping may change what surrounds it).
        let marker = secret.split_whitespace().last().unwrap();
        assert!(
            !everything.contains(marker),
            "{marker} (stripped by the redaction) is stored in the database"
        );
    }
}

/// A parked state an older version stored with its config unredacted is redacted at the
/// next start, and its resume still runs under that (now redacted) config.
#[tokio::test]
async fn an_older_unredacted_parked_state_is_scrubbed_at_startup() {
    let h = Harness::with(TestServerOptions {
        stamp_max_bytes: Some(64),
        ..crate::common::legacy_options()
    })
    .await;
    let config = secret_config("m-old", 10);
    let parked = h
        .invoke(json!({
            "session_id": "old",
            "data": {"inputs": {"messages": user("go")}, "parameters": config}
        }))
        .await;
    let gate = parked["interaction_ids"][0].as_str().unwrap().to_string();
    let db = Db::open(&h.server).await;
    let (turn_id, mut state) = db.parked_state_of_gate(&gate).await;
    // What an older version wrote: the whole config, unredacted, and no marker.
    state["config"] = config.clone();
    state.as_object_mut().unwrap().remove("config_redacted");
    db.set_parked_state(&turn_id, &state).await;
    db.close().await;

    let h = h.restart().await;
    let db = Db::open(&h.server).await;
    let (_, scrubbed) = db.parked_state_of_gate(&gate).await;
    db.close().await;
    assert_eq!(scrubbed["config_redacted"], true, "{scrubbed}");
    let text = scrubbed.to_string();
    for secret in stripped_values(&config) {
        let marker = secret.split_whitespace().last().unwrap().to_string();
        assert!(!text.contains(&marker), "{marker} survived the scrub");
    }
    assert_eq!(scrubbed["config"]["agent"]["llm"]["model"], "m-old");

    h.respond(&gate, true).await;
    h.wait_resolved(&gate).await;
    let turns = h.turns("old").await;
    assert_eq!(turns["turns"][1]["model"], "m-old", "{turns}");
}
