//! Fail closed on resume: a resume never runs under a config more permissive than the one
//! that raised its gate; when that config cannot be recovered the turn ends with the
//! reason (turn, run, row) and the approved tool does not run. The default config is
//! deny-by-default.

use crate::common::db::Db;
use crate::common::{user, Harness};
use gatehouse_server::testing::TestServerOptions;
use serde_json::{json, Value};

/// A draft config gating every tool (`ask`), padded past `pad` bytes, whose script reads
/// a file and then deletes a directory.
fn gated_draft(model: &str, pad: usize, command: &str) -> Value {
    json!({"agent": {
        "llm": {"model": model},
        "runner": {"permissions": {"default": "ask"}},
        "instructions": "x".repeat(pad),
        "script": [
            {"tool": "Read", "args": {"path": "/etc/hostname"}},
            {"tool": "Bash", "args": {"command": command}},
            {"say": "finished"}
        ]
    }})
}

async fn pending_gates(h: &Harness, session: &str) -> Vec<Value> {
    let (status, body) = h
        .post(
            "/api/sessions/interactions/query",
            json!({"query": {"session_id": session, "actionable_only": true}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["interactions"].as_array().unwrap().clone()
}

/// The case, at the default cap and at a tiny one: a draft larger than the stamp
/// cap, no workflow references, `ask`. Approving only `Read` must not let `Bash` run: the
/// resumed turn gates `Bash` again, under the same config.
#[tokio::test]
async fn an_unstamped_draft_resumes_under_its_own_config_and_gates_the_next_tool() {
    for (cap, pad, command) in [
        (None, 70 * 1024, "rm -rf /tmp/x"),
        (Some(64), 100, "rm -rf /var/tmp/other"),
    ] {
        let h = Harness::with(TestServerOptions {
            stamp_max_bytes: cap,
            ..crate::common::legacy_options()
        })
        .await;
        let session = format!("big-draft-{pad}");
        let parked = h
            .invoke(json!({
                "session_id": session,
                "data": {"inputs": {"messages": user("tidy up")}, "parameters": gated_draft("m-big", pad, command)}
            }))
            .await;
        assert_eq!(parked["status"], "parked", "{parked}");
        let read_gate = parked["interaction_ids"][0].as_str().unwrap().to_string();
        let row = h.interaction(&read_gate).await;
        assert_eq!(row["data"]["request"]["tool"], "Read");
        // Rendered as Agenta renders a row without a stamp: `null`.
        assert!(
            row["data"]["parameters"].is_null(),
            "over the cap: not stamped: {row}"
        );
        assert!(row["data"]["references"].is_null(), "no references: {row}");

        let (status, _) = h.respond(&read_gate, true).await;
        assert_eq!(status, 200);
        let resolved = h.wait_resolved(&read_gate).await;
        assert_eq!(resolved["data"]["resolution"]["verdict"], "approved");
        assert!(resolved["data"]["resolution"].get("error").is_none());

        let turns = h.turns(&session).await;
        let resumed = &turns["turns"][1];
        assert_eq!(resumed["status"], "parked", "{turns}");
        assert_eq!(resumed["model"], "m-big");
        let output = resumed["output"].as_str().unwrap();
        assert!(output.contains("ran Read"), "{output}");
        assert!(!output.contains("ran Bash"), "Bash ran ungated: {output}");
        let pending = pending_gates(&h, &session).await;
        assert_eq!(pending.len(), 1, "{pending:?}");
        assert_eq!(pending[0]["data"]["request"]["tool"], "Bash");
        assert_eq!(pending[0]["data"]["request"]["args"]["command"], command);

        // Denying Bash skips it; the turn ends.
        let bash_gate = pending[0]["id"].as_str().unwrap().to_string();
        h.respond(&bash_gate, false).await;
        h.wait_resolved(&bash_gate).await;
        let turns = h.turns(&session).await;
        let last = turns["turns"][2]["output"].as_str().unwrap();
        assert!(last.contains("skipped Bash: denied by the user"), "{last}");
        assert!(!last.contains("ran Bash"), "{last}");
    }
}

/// Remove the config a parked turn kept (as an older or damaged state would lack it).
async fn forget_parked_config(db: &Db, gate: &str) {
    let (turn_id, mut state) = db.parked_state_of_gate(gate).await;
    let object = state.as_object_mut().unwrap();
    assert!(object.contains_key("config"), "{state}");
    object.remove("config");
    db.set_parked_state(&turn_id, &state).await;
}

/// Nothing left to recover (no parked config, no stamp, no references): the resume is
/// refused. The approved tool does not run, the turn fails with the reason, the row's
/// resolution carries `error`, and the execution run ends failed with the reason.
#[tokio::test]
async fn an_unrecoverable_config_ends_the_turn_with_the_reason() {
    let h = Harness::with(TestServerOptions {
        stamp_max_bytes: Some(64),
        ..crate::common::legacy_options()
    })
    .await;
    let parked = h
        .invoke(json!({
            "session_id": "lost",
            "data": {"inputs": {"messages": user("go")}, "parameters": gated_draft("m-lost", 200, "rm -rf /tmp/x")}
        }))
        .await;
    let gate = parked["interaction_ids"][0].as_str().unwrap().to_string();
    let execution = parked["execution"].clone();
    let db = Db::open(&h.server).await;
    forget_parked_config(&db, &gate).await;
    db.close().await;

    let (status, _) = h.respond(&gate, true).await;
    assert_eq!(status, 200);
    let resolved = h.wait_resolved(&gate).await;
    let resolution = &resolved["data"]["resolution"];
    assert_eq!(resolution["verdict"], "approved");
    assert_eq!(
        resolution["error"]["code"], "CONFIG_UNRECOVERABLE",
        "{resolution}"
    );
    let message = resolution["error"]["message"].as_str().unwrap();
    assert!(message.contains("cannot be recovered"), "{message}");

    let turns = h.turns("lost").await;
    let resumed = &turns["turns"][1];
    assert_eq!(resumed["status"], "failed", "{turns}");
    let output = resumed["output"].as_str().unwrap();
    assert!(output.contains("resume refused"), "{output}");
    assert!(!output.contains("ran "), "no tool ran: {output}");
    assert!(pending_gates(&h, "lost").await.is_empty());

    // The run (its execution session) ended failed, with the reason.
    let path = format!(
        "/api/rooms/{}/execution-sessions/{}",
        execution["room_id"].as_str().unwrap(),
        execution["session_id"].as_str().unwrap()
    );
    let (status, session) = h.get(&path).await;
    assert_eq!(status, 200, "{session}");
    assert_eq!(session["data"]["status"], "failed", "{session}");
    assert!(
        session["data"]["outcome"]
            .to_string()
            .contains("cannot be recovered"),
        "{session}"
    );
}

/// Without the parked config, the row's stamp (the same redacted config) still recovers
/// it exactly.
#[tokio::test]
async fn without_the_parked_config_the_stamp_recovers_it() {
    let h = Harness::legacy().await;
    let parked = h
        .invoke(json!({
            "session_id": "stamped",
            "data": {"inputs": {"messages": user("go")}, "parameters": gated_draft("m-stamped", 10, "rm -rf /tmp/y")}
        }))
        .await;
    let gate = parked["interaction_ids"][0].as_str().unwrap().to_string();
    assert_eq!(
        h.interaction(&gate).await["data"]["parameters"]["agent"]["llm"]["model"],
        "m-stamped"
    );
    let db = Db::open(&h.server).await;
    forget_parked_config(&db, &gate).await;
    db.close().await;
    h.respond(&gate, true).await;
    h.wait_resolved(&gate).await;
    let turns = h.turns("stamped").await;
    assert_eq!(turns["turns"][1]["model"], "m-stamped", "{turns}");
    let pending = pending_gates(&h, "stamped").await;
    assert_eq!(pending[0]["data"]["request"]["tool"], "Bash", "{pending:?}");
}

/// Without the parked config and without a stamp, the revision the turn pinned recovers
/// it; once that revision is gone, the resume is refused (never HEAD, never the default).
#[tokio::test]
async fn a_pinned_revision_recovers_it_until_the_revision_is_gone() {
    let h = Harness::with(TestServerOptions {
        stamp_max_bytes: Some(10),
        ..crate::common::legacy_options()
    })
    .await;
    let committed = h.commit("wf", "wf.default", "m-pinned", "ask").await;
    let revision_id = committed["revision"]["id"].as_str().unwrap().to_string();
    let mut gates = Vec::new();
    for session in ["pinned-kept", "pinned-gone"] {
        let parked = h
            .invoke(json!({
                "session_id": session,
                "references": {"workflow_revision": {"id": revision_id}},
                "data": {"inputs": {"messages": user("go")}}
            }))
            .await;
        assert_eq!(parked["model"], "m-pinned", "{parked}");
        gates.push(parked["interaction_ids"][0].as_str().unwrap().to_string());
    }
    // HEAD moves to a permissive config meanwhile: it must not be used.
    h.commit("wf", "wf.default", "m-head", "allow").await;
    let db = Db::open(&h.server).await;
    for gate in &gates {
        forget_parked_config(&db, gate).await;
    }

    h.respond(&gates[0], true).await;
    h.wait_resolved(&gates[0]).await;
    let turns = h.turns("pinned-kept").await;
    assert_eq!(turns["turns"][1]["model"], "m-pinned", "{turns}");

    db.execute(
        "DELETE FROM workflow_revisions WHERE id = $1",
        &[&revision_id],
    )
    .await;
    db.close().await;
    h.respond(&gates[1], true).await;
    let resolved = h.wait_resolved(&gates[1]).await;
    let error = &resolved["data"]["resolution"]["error"];
    assert_eq!(error["code"], "CONFIG_UNRECOVERABLE", "{resolved}");
    assert!(
        error["message"].as_str().unwrap().contains("is gone"),
        "{error}"
    );
    let turns = h.turns("pinned-gone").await;
    assert_eq!(turns["turns"][1]["status"], "failed", "{turns}");
    assert!(!turns["turns"][1]["output"]
        .as_str()
        .unwrap()
        .contains("m-head"));
}

/// A turn nobody configured (no config, nothing to hydrate) runs under the registered
/// default, which refuses every tool.
#[tokio::test]
async fn the_default_config_denies_by_default() {
    let h = Harness::legacy().await;
    for body in [
        json!({"session_id": "bare", "data": {"inputs": {"messages": user("rm -rf /")}}}),
        json!({"session_id": "gone-refs", "references": {"workflow": {"slug": "no-such-workflow"}},
               "data": {"inputs": {"messages": user("rm -rf /")}}}),
    ] {
        let done = h.invoke(body).await;
        assert_eq!(done["status"], "completed", "{done}");
        assert!(done["interaction_ids"].as_array().unwrap().is_empty());
        let output = done["output"].as_str().unwrap();
        assert!(
            output.contains("skipped Bash: denied by policy"),
            "{output}"
        );
        assert!(!output.contains("ran Bash"), "{output}");
    }
}
