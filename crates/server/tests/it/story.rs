//! The upstream story and the resume paths of A6, over real HTTP.

use crate::common::{config, user, Harness};
use gatehouse_server::testing::TestServerOptions;
use serde_json::{json, Value};

/// A dirty draft (model A, ask) gates; the variant's HEAD then moves to model B; an answer
/// from another client resumes the turn under model A.
#[tokio::test]
async fn upstream_story_resumes_under_the_gated_config() {
    let h = Harness::legacy().await;
    h.commit(
        "harness-agent",
        "harness-agent.default",
        "anthropic/model-b-0",
        "ask",
    )
    .await;
    let parked = h
        .invoke(json!({
            "session_id": "story-session",
            "references": {
                "workflow": {"slug": "harness-agent"},
                "workflow_variant": {"slug": "harness-agent.default"}
            },
            "data": {
                "inputs": {"messages": user("list files")},
                "parameters": config("anthropic/model-a", "ask")
            }
        }))
        .await;
    assert_eq!(parked["status"], "parked", "{parked}");
    assert_eq!(parked["model"], "anthropic/model-a");
    assert!(parked["output"]
        .as_str()
        .unwrap()
        .contains("[model=anthropic/model-a]"));
    let ids = parked["interaction_ids"].as_array().unwrap();
    assert_eq!(ids.len(), 1);
    let id = ids[0].as_str().unwrap().to_string();

    let row = h.interaction(&id).await;
    assert_eq!(row["status"], "pending");
    assert_eq!(row["kind"], "user_approval");
    assert_eq!(row["data"]["request"]["tool"], "Bash");
    assert!(row["data"]["request"]["tool_call_id"].is_string());
    assert_eq!(
        row["data"]["parameters"]["agent"]["llm"]["model"],
        "anthropic/model-a"
    );
    let refs = &row["data"]["references"];
    assert_eq!(refs["workflow"]["slug"], "harness-agent");
    assert_eq!(refs["workflow_variant"]["slug"], "harness-agent.default");
    assert!(
        refs.get("workflow_revision").is_none(),
        "a dirty draft has no revision: {refs}"
    );
    for key in [
        "selector",
        "resolution",
        "tags",
        "meta",
        "updated_at",
        "deleted_at",
    ] {
        assert!(
            row.get(key).is_some() || row["data"].get(key).is_some(),
            "{key} rendered"
        );
    }

    // The variant's HEAD moves to model B while the gate waits.
    h.commit(
        "harness-agent",
        "harness-agent.default",
        "anthropic/model-b",
        "allow",
    )
    .await;

    // Another client answers.
    let other = reqwest::Client::new();
    let response = other
        .post(h.url(&format!("/api/sessions/interactions/{id}/respond")))
        .header("Authorization", format!("Bearer {}", h.server.api_key))
        .json(&json!({"answer": {"approved": true}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let answered: Value = response.json().await.unwrap();
    assert_eq!(answered["count"], 1);
    assert_eq!(answered["interaction"]["status"], "responded");
    assert_eq!(
        answered["interaction"]["data"]["resolution"]["answer"]["approved"],
        true
    );

    let resolved = h.wait_resolved(&id).await;
    assert_eq!(resolved["data"]["resolution"]["verdict"], "approved");
    assert_eq!(
        resolved["data"]["resolution"]["tool_call_id"],
        row["data"]["request"]["tool_call_id"]
    );

    let turns = h.turns("story-session").await;
    assert_eq!(turns["count"], 2, "{turns}");
    let first = &turns["turns"][0];
    let second = &turns["turns"][1];
    assert_eq!(first["status"], "parked");
    assert_eq!(first["resumed"], false);
    assert_eq!(second["resumed"], true);
    assert_eq!(second["resumed_from_interaction_id"], id.as_str());
    assert_eq!(second["status"], "completed");
    assert_eq!(
        second["model"], "anthropic/model-a",
        "resumed under the gated config"
    );
    let output = second["output"].as_str().unwrap();
    assert!(
        output.contains("[model=anthropic/model-a] ran Bash"),
        "{output}"
    );
    assert!(output.contains("Done."), "{output}");
    assert!(!output.contains("model-b"), "{output}");
}

/// A row without a stamp (config over the cap) whose run hydrated a saved revision carries
/// that `workflow_revision`: the references-only resume hydrates it, not the moved HEAD.
#[tokio::test]
async fn unstamped_row_from_a_saved_revision_resumes_under_that_revision() {
    let h = Harness::with(TestServerOptions {
        stamp_max_bytes: Some(10),
        ..crate::common::legacy_options()
    })
    .await;
    h.commit("wf", "wf.default", "model-head-1", "ask").await;
    let parked = h
        .invoke(json!({
            "session_id": "legacy",
            "references": {"workflow": {"slug": "wf"}, "workflow_variant": {"slug": "wf.default"}},
            "data": {"inputs": {"messages": user("go")}}
        }))
        .await;
    assert_eq!(parked["status"], "parked", "{parked}");
    assert_eq!(parked["model"], "model-head-1");
    let id = parked["interaction_ids"][0].as_str().unwrap().to_string();
    let row = h.interaction(&id).await;
    assert!(
        row["data"]["parameters"].is_null(),
        "over the cap: no stamp: {row}"
    );
    assert_eq!(
        row["data"]["references"]["workflow_revision"]["version"],
        "1"
    );

    h.commit("wf", "wf.default", "model-head-2", "allow").await;
    let (status, _) = h.respond(&id, true).await;
    assert_eq!(status, 200);
    h.wait_resolved(&id).await;
    let turns = h.turns("legacy").await;
    // The row pinned revision 1 (the run used a saved revision), so the resume hydrates
    // that pinned revision.
    assert_eq!(turns["turns"][1]["model"], "model-head-1", "{turns}");
}

/// A row without a stamp and without a pinned revision does NOT hydrate the variant's
/// HEAD at answer time (that would resume a draft gated under `ask` under whatever HEAD
/// holds, here `allow`): the resume runs under the parked turn's own redacted config.
#[tokio::test]
async fn unstamped_draft_row_resumes_under_its_own_config_not_head() {
    let h = Harness::with(TestServerOptions {
        stamp_max_bytes: Some(10),
        ..crate::common::legacy_options()
    })
    .await;
    h.commit("wf", "wf.default", "model-old", "allow").await;
    let parked = h
        .invoke(json!({
            "session_id": "draft-legacy",
            "references": {"workflow": {"slug": "wf"}, "workflow_variant": {"slug": "wf.default"}},
            "data": {"inputs": {"messages": user("go")}, "parameters": config("model-draft", "ask")}
        }))
        .await;
    assert_eq!(parked["status"], "parked", "{parked}");
    assert_eq!(parked["model"], "model-draft");
    let id = parked["interaction_ids"][0].as_str().unwrap().to_string();
    let row = h.interaction(&id).await;
    assert!(row["data"]["parameters"].is_null(), "{row}");
    assert!(row["data"]["references"].get("workflow_revision").is_none());

    h.commit("wf", "wf.default", "model-new-head", "allow")
        .await;
    let (status, _) = h.respond(&id, true).await;
    assert_eq!(status, 200);
    h.wait_resolved(&id).await;
    let turns = h.turns("draft-legacy").await;
    let resumed = &turns["turns"][1];
    assert_eq!(resumed["model"], "model-draft", "{turns}");
    let output = resumed["output"].as_str().unwrap();
    assert!(output.contains("[model=model-draft] ran Bash"), "{output}");
    assert!(!output.contains("model-new-head"), "{output}");
}

/// A pinned `workflow_revision` resumes under that revision even after HEAD moved.
#[tokio::test]
async fn pinned_revision_resumes_under_that_revision() {
    let h = Harness::with(TestServerOptions {
        stamp_max_bytes: Some(10),
        ..crate::common::legacy_options()
    })
    .await;
    let first = h.commit("wf", "wf.default", "model-pinned", "ask").await;
    h.commit("wf", "wf.default", "model-later", "ask").await;
    let revision_id = first["revision"]["id"].as_str().unwrap();
    let parked = h
        .invoke(json!({
            "session_id": "pinned",
            "references": {"workflow_revision": {"id": revision_id}},
            "data": {"inputs": {"messages": user("go")}}
        }))
        .await;
    assert_eq!(parked["model"], "model-pinned", "{parked}");
    let id = parked["interaction_ids"][0].as_str().unwrap().to_string();
    let row = h.interaction(&id).await;
    assert_eq!(
        row["data"]["references"]["workflow_revision"]["id"],
        revision_id
    );
    assert_eq!(
        row["data"]["references"]["workflow_variant"]["slug"],
        "wf.default"
    );
    h.commit("wf", "wf.default", "model-latest", "allow").await;
    let (status, _) = h.respond(&id, true).await;
    assert_eq!(status, 200);
    h.wait_resolved(&id).await;
    let turns = h.turns("pinned").await;
    assert_eq!(turns["turns"][1]["model"], "model-pinned", "{turns}");
}

/// A denial skips the tool and tells the agent (with the person's message).
#[tokio::test]
async fn denial_skips_the_tool_and_tells_the_agent() {
    let h = Harness::legacy().await;
    let parked = h
        .invoke(json!({
            "session_id": "deny",
            "data": {
                "inputs": {"messages": user("rm things")},
                "parameters": {"agent": {
                    "llm": {"model": "m-deny"},
                    "runner": {"permissions": {"default": "ask"}},
                    "script": [
                        {"tool": "Bash", "args": {"command": "rm -rf /tmp/x"}},
                        {"say": "after the tool"}
                    ]
                }}
            }
        }))
        .await;
    let id = parked["interaction_ids"][0].as_str().unwrap().to_string();
    let (status, _) = h
        .post(
            &format!("/api/sessions/interactions/{id}/respond"),
            json!({"answer": {"approved": false, "message": "not that one"}}),
        )
        .await;
    assert_eq!(status, 200);
    let resolved = h.wait_resolved(&id).await;
    assert_eq!(resolved["data"]["resolution"]["verdict"], "denied");
    let turns = h.turns("deny").await;
    let output = turns["turns"][1]["output"].as_str().unwrap();
    assert!(
        output.contains("[model=m-deny] skipped Bash: denied by the user (not that one)"),
        "{output}"
    );
    assert!(output.contains("after the tool"), "{output}");
    assert!(!output.contains("ran Bash"), "{output}");
}

/// Scripts shape the turn: allow runs the tool, deny skips it, fail fails the turn, and a
/// second ask in the resumed turn parks again with a new gate.
#[tokio::test]
async fn scripts_and_permissions_shape_the_turn() {
    let h = Harness::legacy().await;
    let done = h
        .invoke(json!({"data": {"inputs": {"messages": user("x")}, "parameters": config("m-allow", "allow")}}))
        .await;
    assert_eq!(done["status"], "completed");
    assert!(done["interaction_ids"].as_array().unwrap().is_empty());
    assert!(done["output"]
        .as_str()
        .unwrap()
        .contains("[model=m-allow] ran Bash"));
    assert!(done["session_id"].as_str().is_some_and(|s| !s.is_empty()));

    let denied = h
        .invoke(json!({"data": {"inputs": {"messages": user("x")}, "parameters": config("m-deny", "deny")}}))
        .await;
    assert!(denied["output"]
        .as_str()
        .unwrap()
        .contains("skipped Bash: denied by policy"));

    let failed = h
        .invoke(json!({"data": {"inputs": {"messages": user("x")}, "parameters": {"agent": {
            "llm": {"model": "m-fail"}, "script": [{"say": "one"}, {"fail": "boom"}, {"say": "never"}]
        }}}}))
        .await;
    assert_eq!(failed["status"], "failed");
    let output = failed["output"].as_str().unwrap();
    assert!(
        output.contains("[model=m-fail] failed: boom") && !output.contains("never"),
        "{output}"
    );

    let bad = h
        .invoke(
            json!({"data": {"inputs": {"messages": user("x")}, "parameters": {"agent": {
                "llm": {"model": "m-bad"}, "script": [{"dance": 1}]
            }}}}),
        )
        .await;
    assert_eq!(bad["status"], "failed");
    assert!(
        bad["output"].as_str().unwrap().contains("agent.script[0]"),
        "{bad}"
    );

    let twice = h
        .invoke(json!({"session_id": "twice", "data": {"inputs": {"messages": user("x")}, "parameters": {"agent": {
            "llm": {"model": "m-twice"}, "runner": {"permissions": {"default": "ask"}},
            "script": [{"tool": "Bash", "args": {"n": 1}}, {"tool": "Edit", "args": {"n": 2}}, {"say": "end"}]
        }}}}))
        .await;
    let first = twice["interaction_ids"][0].as_str().unwrap().to_string();
    h.respond(&first, true).await;
    h.wait_resolved(&first).await;
    let (_, pending) = h
        .post(
            "/api/sessions/interactions/query",
            json!({"query": {"session_id": "twice", "actionable_only": true}}),
        )
        .await;
    assert_eq!(pending["count"], 1, "{pending}");
    let second = &pending["interactions"][0];
    assert_eq!(second["data"]["request"]["tool"], "Edit");
    assert_eq!(
        second["data"]["parameters"]["agent"]["llm"]["model"],
        "m-twice"
    );
    let second_id = second["id"].as_str().unwrap().to_string();
    h.respond(&second_id, true).await;
    h.wait_resolved(&second_id).await;
    let turns = h.turns("twice").await;
    assert_eq!(turns["count"], 3, "{turns}");
    assert_eq!(turns["turns"][1]["status"], "parked");
    assert_eq!(turns["turns"][2]["status"], "completed");
    assert!(turns["turns"][2]["output"]
        .as_str()
        .unwrap()
        .contains("end"));
}

/// A new turn in a session makes the older turn's pending gate stale: it is cancelled,
/// and answering it is a 409.
#[tokio::test]
async fn a_new_turn_cancels_the_stale_gate() {
    let h = Harness::legacy().await;
    let first = h
        .invoke(json!({"session_id": "stale", "data": {"inputs": {"messages": user("one")}, "parameters": config("m-1", "ask")}}))
        .await;
    let old_gate = first["interaction_ids"][0].as_str().unwrap().to_string();
    let second = h
        .invoke(json!({"session_id": "stale", "data": {"inputs": {"messages": user("two")}, "parameters": config("m-2", "ask")}}))
        .await;
    let new_gate = second["interaction_ids"][0].as_str().unwrap().to_string();
    assert_eq!(h.interaction(&old_gate).await["status"], "cancelled");
    assert_eq!(h.interaction(&new_gate).await["status"], "pending");
    let (status, body) = h.respond(&old_gate, true).await;
    assert_eq!(status, 409);
    assert_eq!(body["code"], "ALREADY_ANSWERED");
    // Another session's gate is untouched.
    let other = h
        .invoke(json!({"session_id": "stale-other", "data": {"inputs": {"messages": user("x")}, "parameters": config("m", "ask")}}))
        .await;
    h.invoke(json!({"session_id": "stale", "data": {"inputs": {"messages": user("three")}, "parameters": config("m-3", "allow")}}))
        .await;
    let other_gate = other["interaction_ids"][0].as_str().unwrap();
    assert_eq!(h.interaction(other_gate).await["status"], "pending");
    assert_eq!(h.interaction(&new_gate).await["status"], "cancelled");
}
