//! Execution sessions and run interventions (B1-B3, C3, C6) over real HTTP.
//!
//! Runs park at an approval gate so that an intervention can be requested while the run
//! waits; answering the gate resumes the run, which reaches its checkpoints for real.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{config, user, Harness};
use gatehouse_server::execution::Resolution;
use gatehouse_server::testing::TestServerOptions;
use gatehouse_wire::error::GatehouseCode;
use gatehouse_wire::execution::{Checkpoint, ExecutionSession};
use serde_json::{json, Value};

/// Invoke `session` with an inline config; returns the answer.
async fn invoke(h: &Harness, session: &str, parameters: Value) -> Value {
    h.invoke(json!({
        "session_id": session,
        "data": {"inputs": {"messages": user("list files")}, "parameters": parameters}
    }))
    .await
}

fn session_path(room: &str, session: &str) -> String {
    format!("/api/rooms/{room}/execution-sessions/{session}")
}

/// `GET` the session document (asserting 200).
async fn get_session(h: &Harness, room: &str, session: &str) -> Value {
    let (status, body) = h.get(&session_path(room, session)).await;
    assert_eq!(status, 200, "{body}");
    body["data"].clone()
}

/// The `(room, session)` of an invoke answer.
fn execution_of(answer: &Value) -> (String, String, u64) {
    let ex = &answer["execution"];
    (
        ex["room_id"].as_str().expect("room_id").to_string(),
        ex["session_id"].as_str().expect("session_id").to_string(),
        ex["revision"].as_u64().expect("revision"),
    )
}

async fn request(
    h: &Harness,
    room: &str,
    session: &str,
    revision: u64,
    op: &str,
    instruction: &str,
    checkpoint: &str,
) -> (u16, Value) {
    h.post(
        &format!("{}/interventions", session_path(room, session)),
        json!({"expectedRevision": revision, "operationId": op, "instruction": instruction, "checkpoint": checkpoint}),
    )
    .await
}

/// Poll until the session is terminal (deadline 10 s).
async fn wait_terminal(h: &Harness, room: &str, session: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let doc = get_session(h, room, session).await;
        if matches!(
            doc["status"].as_str(),
            Some("completed" | "failed" | "canceled")
        ) {
            return doc;
        }
        assert!(Instant::now() < deadline, "session never ended: {doc}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn approve(h: &Harness, interaction: &str, approved: bool) {
    let (status, body) = h.respond(interaction, approved).await;
    assert_eq!(status, 200, "{body}");
}

fn events_of<'a>(doc: &'a Value, kind: &str) -> Vec<&'a Value> {
    doc["events"]
        .as_array()
        .map(|events| events.iter().filter(|e| e["type"] == kind).collect())
        .unwrap_or_default()
}

fn intervention<'a>(doc: &'a Value, op: &str) -> &'a Value {
    doc["interventions"]
        .as_array()
        .and_then(|items| items.iter().find(|i| i["operationId"] == op))
        .unwrap_or_else(|| panic!("no intervention {op} in {doc}"))
}

/// Park a run at its approval gate: `(answer, room, session, revision, interaction id)`.
async fn park(h: &Harness, task: &str, parameters: Value) -> (Value, String, String, u64, String) {
    let answer = invoke(h, task, parameters).await;
    assert_eq!(answer["status"], "parked", "{answer}");
    let (room, session, revision) = execution_of(&answer);
    let gate = answer["interaction_ids"][0]
        .as_str()
        .expect("gate")
        .to_string();
    (answer, room, session, revision, gate)
}

#[tokio::test]
async fn invoke_opens_a_session_that_binds_the_run() {
    let h = Harness::legacy().await;
    let mut parameters = config("m-bind", "allow");
    parameters["agent"]["execution"] = json!({
        "authority_revision": "auth-3", "role_revision": "role-9", "runtime_profile": "local-fast"
    });
    let answer = invoke(&h, "task-bind", parameters).await;
    assert_eq!(answer["status"], "completed", "{answer}");
    let (room, session, revision) = execution_of(&answer);
    assert_eq!(room, "room-task-bind");
    let doc = get_session(&h, &room, &session).await;
    assert_eq!(
        doc["revision"].as_u64(),
        Some(revision),
        "answer carries the final revision"
    );
    assert_eq!(doc["tenantId"], h.server.project_id.as_str());
    assert_eq!(doc["runId"], answer["turn_id"]);
    assert_eq!(doc["taskId"], "task-bind");
    assert_eq!(doc["participantId"], "agent");
    let digest = doc["agentRevisionDigest"].as_str().unwrap();
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );
    assert_eq!(doc["agentRevisionId"], format!("draft:{}", &digest[7..]));
    assert_eq!(doc["runtimeProfile"], "local-fast");
    assert_eq!(doc["authorityRevision"], "auth-3");
    assert_eq!(doc["roleRevision"], "role-9");
    assert_eq!(doc["status"], "completed");
    assert_eq!(doc["outcome"]["status"], "completed");
    // The default script: say, Bash, say: three steps, three outputs, one protected call.
    assert_eq!(
        doc["checkpointProgress"],
        json!({"preStep": 3, "postOutput": 3, "preAction": 1, "last": "post_output"})
    );
    assert_eq!(doc["events"][0]["type"], "session_opened");
    assert_eq!(doc["events"][0]["sequence"], 1);
    assert_eq!(events_of(&doc, "session_reconciled").len(), 1);

    // A saved revision binds that revision and names the workflow as participant.
    let committed = h
        .commit("bound-agent", "bound-agent.default", "m-saved", "allow")
        .await;
    let answer = h
        .invoke(json!({
            "session_id": "task-saved",
            "references": {"workflow": {"slug": "bound-agent"}, "workflow_variant": {"slug": "bound-agent.default"}},
            "data": {"inputs": {"messages": user("hi")}}
        }))
        .await;
    let (room, session, _) = execution_of(&answer);
    let doc = get_session(&h, &room, &session).await;
    assert_eq!(doc["agentRevisionId"], committed["revision"]["id"]);
    assert_eq!(doc["participantId"], "bound-agent");
    assert!(doc["agentRevisionDigest"]
        .as_str()
        .is_some_and(|d| d.starts_with("sha256:")));

    // Naming that revision while running another config is refused (B1): a run is
    // bound to the exact revision it runs, never silently bound as a draft.
    let (status, body) = h
        .post(
            "/api/invoke",
            json!({
                "session_id": "task-saved-dirty",
                "references": {"workflow": {"slug": "bound-agent"}, "workflow_variant": {"slug": "bound-agent.default"},
                               "workflow_revision": {"id": committed["revision"]["id"]}},
                "data": {"inputs": {"messages": user("hi")}, "parameters": config("m-edited", "allow")}
            }),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["code"], "BINDING_CONFLICT", "{body}");
    // An unknown revision is refused too (AgentPlat's registry: "Agent revision not found").
    let (status, body) = h
        .post(
            "/api/invoke",
            json!({
                "session_id": "task-unknown-revision",
                "references": {"workflow_revision": {"id": "019fac94-0000-7000-8000-00000000dead"}},
                "data": {"inputs": {"messages": user("hi")}, "parameters": config("m-edited", "allow")}
            }),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .starts_with("Agent revision not found"),
        "{body}"
    );
    // A revision whose config names another participant than the agent it belongs to is
    // refused (AgentPlat: "Agent revision does not match the assigned Room participant").
    let mut foreign = config("m-foreign", "allow");
    foreign["agent"]["execution"] = json!({"participant_id": "someone-else"});
    let (status, _) = h
        .post(
            "/api/workflows/revisions/commit",
            json!({"workflow": {"slug": "foreign-agent"}, "variant": {"slug": "foreign-agent.default"}, "parameters": foreign}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, body) = h
        .post(
            "/api/invoke",
            json!({
                "session_id": "task-other-participant",
                "references": {"workflow": {"slug": "foreign-agent"}, "workflow_variant": {"slug": "foreign-agent.default"}},
                "data": {"inputs": {"messages": user("hi")}}
            }),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        body["detail"],
        "Agent revision does not match the assigned Room participant"
    );

    // Another tenant (project) cannot see it.
    let other = format!(
        "{}{}?project_id={}",
        h.server.base_url,
        session_path(&room, &session),
        uuid::Uuid::new_v4()
    );
    let response = h
        .http
        .get(other)
        .header("Authorization", h.server.authorization())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["message"], "Execution session not found");
}

/// The recipe: request, let the run reach the checkpoint, read back the persisted
/// application; a stale revision is a typed conflict and applies nothing.
#[tokio::test]
async fn stop_requested_while_parked_halts_the_run_at_pre_action() {
    let h = Harness::legacy().await;
    let (_, room, session, revision, gate) = park(&h, "task-stop", config("m-stop", "ask")).await;
    let doc = get_session(&h, &room, &session).await;
    assert_eq!(doc["status"], "paused");

    let (status, body) = request(
        &h,
        &room,
        &session,
        revision,
        "op-stop",
        "stop",
        "pre_action",
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let requested = &body["data"];
    assert_eq!(requested["revision"].as_u64(), Some(revision + 1));
    let item = intervention(requested, "op-stop");
    assert_eq!(item["status"], "pending");
    assert_eq!(item["requestedByParticipantId"], "tester");
    assert!(requested["events"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["type"] != "intervention_applied"));

    // The same revision again, for another operation: stale, typed, nothing added.
    let (status, body) =
        request(&h, &room, &session, revision, "op-late", "stop", "pre_step").await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "CONFLICT");
    assert_eq!(body["error"]["gatehouseCode"], "REVISION_CONFLICT");
    assert_eq!(
        body["error"]["message"],
        "Execution session revision conflict"
    );
    let doc = get_session(&h, &room, &session).await;
    assert_eq!(doc["interventions"].as_array().unwrap().len(), 1);
    assert_eq!(doc["revision"].as_u64(), Some(revision + 1));

    approve(&h, &gate, true).await;
    let doc = wait_terminal(&h, &room, &session).await;
    assert_eq!(doc["status"], "canceled", "{doc}");
    let item = intervention(&doc, "op-stop");
    assert_eq!(item["status"], "applied");
    assert_eq!(item["attempts"], 1);
    assert!(item.get("dispatchToken").is_none());
    let applied = events_of(&doc, "intervention_applied");
    assert_eq!(applied.len(), 1);
    assert_eq!(applied[0]["operationId"], "op-stop");
    assert_eq!(applied[0]["checkpoint"], "pre_action");
    assert_eq!(applied[0]["details"]["effect"], "halted");
    assert_eq!(events_of(&doc, "intervention_claimed").len(), 1);
    assert!(doc["outcome"]["reason"]
        .as_str()
        .unwrap()
        .contains("op-stop"));
    // The tool never ran: the resumed turn stopped before it.
    let turns = h.turns("task-stop").await;
    let output = turns["turns"][1]["output"].as_str().unwrap().to_string();
    assert!(!output.contains("ran Bash"), "{output}");
    assert!(output.contains("halted at pre_action"), "{output}");
}

#[tokio::test]
async fn other_instructions_are_injected_into_the_next_step() {
    let h = Harness::legacy().await;
    let (_, room, session, revision, gate) = park(&h, "task-inject", config("m-inj", "ask")).await;
    let (status, body) = request(
        &h, &room, &session, revision, "op-brief", "be brief", "pre_step",
    )
    .await;
    assert_eq!(status, 202, "{body}");
    approve(&h, &gate, true).await;
    let doc = wait_terminal(&h, &room, &session).await;
    assert_eq!(doc["status"], "completed");
    let item = intervention(&doc, "op-brief");
    assert_eq!(item["status"], "applied");
    let applied = events_of(&doc, "intervention_applied");
    assert_eq!(applied.len(), 1);
    assert_eq!(applied[0]["details"]["effect"], "injected");
    // The resumed turn ran the tool (step 1) and reached pre_step at step 2.
    assert_eq!(applied[0]["details"]["step"], 2);
    let turns = h.turns("task-inject").await;
    let output = turns["turns"][1]["output"].as_str().unwrap().to_string();
    assert!(output.contains("(instruction: be brief) Done."), "{output}");
}

#[tokio::test]
async fn replay_conflict_requester_and_the_256_limit() {
    let h = Harness::legacy().await;
    let (_, room, session, revision, _) = park(&h, "task-limit", config("m-lim", "ask")).await;
    // The requester is the authenticated actor, never the body.
    let (status, body) = h
        .post(
            &format!("{}/interventions", session_path(&room, &session)),
            json!({"expectedRevision": revision, "operationId": "op-0", "instruction": "note 0",
                   "checkpoint": "pre_step", "requestedByParticipantId": "mallory"}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(
        intervention(&body["data"], "op-0")["requestedByParticipantId"],
        "tester"
    );
    let after_first = body["data"]["revision"].as_u64().unwrap();

    // Replay with the now stale revision: the same session, nothing new.
    let (status, body) = request(&h, &room, &session, revision, "op-0", "note 0", "pre_step").await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["data"]["revision"].as_u64(), Some(after_first));
    assert_eq!(body["data"]["interventions"].as_array().unwrap().len(), 1);
    // Same operation id, another instruction: bound elsewhere.
    let (status, body) = request(
        &h,
        &room,
        &session,
        after_first,
        "op-0",
        "note X",
        "pre_step",
    )
    .await;
    assert_eq!(status, 409);
    assert_eq!(body["error"]["gatehouseCode"], "OPERATION_CONFLICT");
    assert_eq!(
        body["error"]["message"],
        "Run intervention operationId is bound to another request"
    );

    let mut current = after_first;
    for n in 1..256 {
        let (status, body) = request(
            &h,
            &room,
            &session,
            current,
            &format!("op-{n}"),
            &format!("note {n}"),
            "pre_step",
        )
        .await;
        assert_eq!(status, 202, "request {n}: {body}");
        current = body["data"]["revision"].as_u64().unwrap();
    }
    let (status, body) = request(
        &h,
        &room,
        &session,
        current,
        "op-256",
        "one too many",
        "pre_step",
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["gatehouseCode"], "INTERVENTION_LIMIT");
    let doc = get_session(&h, &room, &session).await;
    assert_eq!(doc["interventions"].as_array().unwrap().len(), 256);
    assert_eq!(doc["revision"].as_u64(), Some(current));
    // A replay of an existing one is still answered.
    let (status, _) = request(&h, &room, &session, 1, "op-255", "note 255", "pre_step").await;
    assert_eq!(status, 202);

    // Malformed bodies are AgentPlat-shaped 400s, in AgentPlat's words.
    let (status, body) = h
        .post(
            &format!("{}/interventions", session_path(&room, &session)),
            json!({"expectedRevision": 1}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "VALIDATION_ERROR");
    assert_eq!(body["error"]["message"], "operationId is required");
}

fn session_of(doc: &Value) -> ExecutionSession {
    serde_json::from_value(doc.clone()).expect("a wire ExecutionSession")
}

/// Two (many) dispatchers race for one intervention: one claim, one application.
#[tokio::test]
async fn racing_dispatchers_apply_once() {
    let h = Harness::legacy().await;
    let (_, room, session, revision, _) = park(&h, "task-race", config("m-race", "ask")).await;
    let (status, _) = request(
        &h,
        &room,
        &session,
        revision,
        "op-race",
        "be careful",
        "pre_action",
    )
    .await;
    assert_eq!(status, 202);

    let exec = Arc::new(h.server.server.state().executions.clone());
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let exec = exec.clone();
        let session = session.clone();
        tasks.push(tokio::spawn(async move {
            let claim = exec
                .claim(&session, Checkpoint::PreAction, Duration::from_secs(30))
                .await
                .expect("claim");
            match claim {
                Some(claim) => {
                    let details = json!({"effect": "injected", "by": "racer"});
                    exec.resolve(
                        &session,
                        &claim.operation_id,
                        &claim.dispatch_token,
                        &Resolution::Applied { details },
                    )
                    .await
                    .expect("the winner resolves");
                    Some(claim.dispatch_token)
                }
                None => None,
            }
        }));
    }
    let mut winners = Vec::new();
    for task in tasks {
        if let Some(token) = task.await.unwrap() {
            winners.push(token);
        }
    }
    assert_eq!(winners.len(), 1, "exactly one dispatcher wins the claim");
    let doc = get_session(&h, &room, &session).await;
    assert_eq!(events_of(&doc, "intervention_applied").len(), 1);
    assert_eq!(events_of(&doc, "intervention_claimed").len(), 1);
    assert_eq!(intervention(&doc, "op-race")["attempts"], 1);
    assert!(session_of(&doc).applied_evidence("op-race").is_some());

    // Resolve-once: the same outcome again is a no-op, the other outcome is refused,
    // and a token that never owned the claim is refused too.
    let again = exec
        .resolve(
            &session,
            "op-race",
            &winners[0],
            &Resolution::Applied { details: json!({}) },
        )
        .await
        .expect("same outcome is a no-op");
    assert_eq!(again.revision, doc["revision"].as_u64().unwrap());
    let other = exec
        .resolve(
            &session,
            "op-race",
            &winners[0],
            &Resolution::Rejected {
                reason: "late".into(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(other.code, GatehouseCode::ResolvedDifferently);
    let doc = get_session(&h, &room, &session).await;
    assert_eq!(events_of(&doc, "intervention_applied").len(), 1);
    assert_eq!(events_of(&doc, "intervention_rejected").len(), 0);
}

/// A dispatcher dies after its claim: the lease expires, another applies it, once; the
/// dead one's token no longer resolves.
#[tokio::test]
async fn dead_dispatcher_lease_expires_and_another_applies_once() {
    let h = Harness::legacy().await;
    let (_, room, session, revision, _) = park(&h, "task-dead", config("m-dead", "ask")).await;
    let (status, _) = request(&h, &room, &session, revision, "op-dead", "stop", "pre_step").await;
    assert_eq!(status, 202);
    let exec = h.server.server.state().executions.clone();
    let lease = Duration::from_millis(50);
    let first = exec
        .claim(&session, Checkpoint::PreStep, lease)
        .await
        .unwrap()
        .expect("first claim");
    assert_eq!(first.attempts, 1);
    // While the lease holds, nobody else gets it.
    assert!(exec
        .claim(&session, Checkpoint::PreStep, lease)
        .await
        .unwrap()
        .is_none());
    // Poll (no fixed sleep) until the lease has expired and another dispatcher claims it.
    let deadline = Instant::now() + Duration::from_secs(5);
    let second = loop {
        if let Some(claim) = exec
            .claim(&session, Checkpoint::PreStep, lease)
            .await
            .unwrap()
        {
            break claim;
        }
        assert!(Instant::now() < deadline, "the lease never expired");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert_eq!(second.operation_id, "op-dead");
    assert_eq!(second.attempts, 2);
    assert_ne!(second.dispatch_token, first.dispatch_token);
    let applied = Resolution::Applied {
        details: json!({"effect": "halted", "by": "second"}),
    };
    exec.resolve(&session, "op-dead", &second.dispatch_token, &applied)
        .await
        .unwrap();
    // The dead dispatcher comes back: the intervention is applied already (same outcome: no-op)...
    exec.resolve(&session, "op-dead", &first.dispatch_token, &applied)
        .await
        .unwrap();
    let doc = get_session(&h, &room, &session).await;
    assert_eq!(events_of(&doc, "intervention_applied").len(), 1);
    assert_eq!(events_of(&doc, "intervention_claimed").len(), 2);
    assert_eq!(intervention(&doc, "op-dead")["attempts"], 2);

    // ...and on a fresh intervention a stale token is DISPATCH_OWNERSHIP_LOST over HTTP-visible state.
    let current = doc["revision"].as_u64().unwrap();
    let (status, _) = request(
        &h,
        &room,
        &session,
        current,
        "op-dead-2",
        "note",
        "post_output",
    )
    .await;
    assert_eq!(status, 202);
    let a = exec
        .claim(&session, Checkpoint::PostOutput, lease)
        .await
        .unwrap()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let b = loop {
        if let Some(claim) = exec
            .claim(&session, Checkpoint::PostOutput, lease)
            .await
            .unwrap()
        {
            break claim;
        }
        assert!(Instant::now() < deadline, "the lease never expired");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let lost = exec
        .resolve(&session, "op-dead-2", &a.dispatch_token, &applied)
        .await
        .unwrap_err();
    assert_eq!(lost.code, GatehouseCode::DispatchOwnershipLost);
    assert_eq!(lost.message, "Run intervention dispatch ownership was lost");
    exec.resolve(&session, "op-dead-2", &b.dispatch_token, &applied)
        .await
        .unwrap();
    let doc = get_session(&h, &room, &session).await;
    assert_eq!(events_of(&doc, "intervention_applied").len(), 2);
    // Lease bounds (1 ms .. 300 s).
    let err = exec
        .claim(&session, Checkpoint::PreStep, Duration::ZERO)
        .await
        .unwrap_err();
    assert_eq!(err.code, GatehouseCode::BadRequest);
    let err = exec
        .claim(&session, Checkpoint::PreStep, Duration::from_secs(301))
        .await
        .unwrap_err();
    assert_eq!(err.code, GatehouseCode::BadRequest);
}

#[tokio::test]
async fn protected_work_without_pre_action_fails_the_run() {
    let h = Harness::legacy().await;
    let mut parameters = config("m-prot", "allow");
    parameters["agent"]["protected"] = json!(true);
    // A runtime that awaits pre_action: fine.
    let answer = invoke(&h, "task-protected-ok", parameters.clone()).await;
    assert_eq!(answer["status"], "completed", "{answer}");
    let (room, session, _) = execution_of(&answer);
    let doc = get_session(&h, &room, &session).await;
    assert_eq!(doc["checkpointProgress"]["preAction"], 1);
    assert_eq!(doc["status"], "completed");

    // A runtime that skips it: the run fails with ADAPTER_ERROR's message.
    parameters["agent"]["runner"]["skip_pre_action"] = json!(true);
    let answer = invoke(&h, "task-protected-bad", parameters).await;
    assert_eq!(answer["status"], "failed", "{answer}");
    let output = answer["output"].as_str().unwrap();
    assert!(
        output.contains("Runtime completed protected work without invoking pre_action"),
        "{output}"
    );
    assert!(!output.contains("Done."), "the run stops there: {output}");
    let (room, session, _) = execution_of(&answer);
    let doc = get_session(&h, &room, &session).await;
    assert_eq!(doc["status"], "failed");
    assert_eq!(
        doc["outcome"]["reason"],
        "Runtime completed protected work without invoking pre_action"
    );
    assert_eq!(doc["checkpointProgress"]["preAction"], 0);
    let reconciled = events_of(&doc, "session_reconciled");
    assert_eq!(reconciled[0]["details"]["code"], "ADAPTER_ERROR");

    // Unprotected tasks may skip it (nothing to protect).
    let mut parameters = config("m-free", "allow");
    parameters["agent"]["runner"]["skip_pre_action"] = json!(true);
    let answer = invoke(&h, "task-unprotected", parameters).await;
    assert_eq!(answer["status"], "completed", "{answer}");
}

#[tokio::test]
async fn run_ending_before_the_checkpoint_rejects_with_a_reason() {
    let h = Harness::legacy().await;
    let (_, room, session, revision, gate) =
        park(&h, "task-unreached", config("m-unr", "ask")).await;
    let (status, _) = request(
        &h,
        &room,
        &session,
        revision,
        "op-never",
        "stop",
        "pre_action",
    )
    .await;
    assert_eq!(status, 202);
    // Denied: the tool is skipped, no pre_action is ever reached, the run completes.
    approve(&h, &gate, false).await;
    let doc = wait_terminal(&h, &room, &session).await;
    assert_eq!(doc["status"], "completed");
    let item = intervention(&doc, "op-never");
    assert_eq!(item["status"], "rejected");
    assert_eq!(
        item["resolutionReason"],
        "the run completed before reaching checkpoint pre_action"
    );
    assert!(events_of(&doc, "intervention_applied").is_empty());
    let rejected = events_of(&doc, "intervention_rejected");
    assert_eq!(rejected.len(), 1);
    let reconciled = events_of(&doc, "session_reconciled");
    assert_eq!(
        reconciled[0]["details"]["rejectedOperationIds"],
        json!(["op-never"])
    );
    // A terminal session takes no more interventions.
    let current = doc["revision"].as_u64().unwrap();
    let (status, body) =
        request(&h, &room, &session, current, "op-after", "stop", "pre_step").await;
    assert_eq!(status, 409);
    assert_eq!(body["error"]["gatehouseCode"], "SESSION_NOT_ACTIVE");
    assert_eq!(body["error"]["message"], "Execution session is not active");
}

#[tokio::test]
async fn recovery_successor_binds_a_failed_predecessor_of_the_same_task() {
    let h = Harness::legacy().await;
    let mut failing = config("m-fail", "allow");
    failing["agent"]["script"] = json!([{"say": "trying"}, {"fail": "disk full"}]);
    let failed = invoke(&h, "task-recover", failing).await;
    assert_eq!(failed["status"], "failed");
    let (room, failed_session, _) = execution_of(&failed);
    let doc = get_session(&h, &room, &failed_session).await;
    assert_eq!(doc["status"], "failed");
    assert_eq!(doc["outcome"]["reason"], "disk full");

    let successor = h
        .invoke(json!({
            "session_id": "task-recover",
            "data": {"inputs": {"messages": user("again")}, "parameters": config("m-fail", "allow"),
                     "execution": {"predecessorSessionId": failed_session}}
        }))
        .await;
    assert_eq!(successor["status"], "completed", "{successor}");
    let (room2, successor_session, _) = execution_of(&successor);
    assert_eq!(room2, room);
    assert_ne!(successor_session, failed_session);
    let doc = get_session(&h, &room, &successor_session).await;
    assert_eq!(doc["predecessorSessionId"], failed_session.as_str());
    assert_eq!(
        doc["events"][0]["details"]["predecessorSessionId"],
        failed_session.as_str()
    );

    // A successor naming a non-failed predecessor (the completed successor): 409.
    let (status, body) = h
        .post(
            "/api/invoke",
            json!({"session_id": "task-recover",
                   "data": {"inputs": {"messages": user("x")}, "parameters": config("m", "allow"),
                            "execution": {"predecessorSessionId": successor_session}}}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["code"], "INVALID_STATE");
    // Naming another task's failed session: 400.
    let (status, body) = h
        .post(
            "/api/invoke",
            json!({"session_id": "task-other",
                   "data": {"inputs": {"messages": user("x")}, "parameters": config("m", "allow"),
                            "execution": {"predecessorSessionId": failed_session}}}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "BAD_REQUEST");
    // Naming nothing known: 400; and nothing ran for the refused invokes.
    let (status, _) = h
        .post(
            "/api/invoke",
            json!({"session_id": "task-recover",
                   "data": {"inputs": {"messages": user("x")}, "parameters": config("m", "allow"),
                            "execution": {"predecessorSessionId": "no-such-session"}}}),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(h.turns("task-recover").await["count"], 2);
}

#[tokio::test]
async fn reopening_keeps_the_binding() {
    let h = Harness::legacy().await;
    let answer = invoke(&h, "task-reopen", config("m", "allow")).await;
    let (room, session, _) = execution_of(&answer);
    let doc = get_session(&h, &room, &session).await;
    let exec = h.server.server.state().executions.clone();
    let mut open = gatehouse_server::execution::OpenSession {
        tenant_id: h.server.project_id.clone(),
        room_id: room.clone(),
        run_id: doc["runId"].as_str().unwrap().to_string(),
        task_id: "task-reopen".into(),
        participant_id: "agent".into(),
        agent_revision_id: doc["agentRevisionId"].as_str().unwrap().to_string(),
        agent_revision_digest: doc["agentRevisionDigest"].as_str().unwrap().to_string(),
        predecessor_session_id: None,
        runtime_profile: None,
        authority_revision: None,
        role_revision: None,
        protected: false,
        turn_id: None,
    };
    let hold = gatehouse_server::execution::RunHold::default();
    let same = exec.open(&open, &hold).await.unwrap();
    assert_eq!(same.session_id, session);
    open.participant_id = "someone-else".into();
    let err = exec.open(&open, &hold).await.unwrap_err();
    assert_eq!(err.code, GatehouseCode::BindingConflict);
}

#[tokio::test]
async fn events_after_and_the_sse_stream() {
    let h = Harness::legacy().await;
    let (_, room, session, revision, gate) = park(&h, "task-sse", config("m-sse", "ask")).await;
    let (status, _) = request(
        &h,
        &room,
        &session,
        revision,
        "op-sse",
        "stop",
        "pre_action",
    )
    .await;
    assert_eq!(status, 202);
    let (status, body) = h
        .get(&format!("{}/events?after=1", session_path(&room, &session)))
        .await;
    assert_eq!(status, 200);
    let events = body["data"].as_array().unwrap();
    assert!(events.iter().all(|e| e["sequence"].as_u64().unwrap() > 1));
    assert_eq!(events.last().unwrap()["type"], "intervention_requested");

    let response = h
        .open_stream(&format!(
            "{}/events/stream?after=0",
            session_path(&room, &session)
        ))
        .await;
    approve(&h, &gate, true).await;
    // The stream ends by itself once the session is reconciled.
    let text = tokio::time::timeout(Duration::from_secs(10), response.text())
        .await
        .expect("the stream ends after reconciliation")
        .unwrap();
    let names = text.lines().filter(|l| l.starts_with("event:")).count();
    assert!(names >= 5, "{text}");
    assert!(text
        .lines()
        .filter(|l| l.starts_with("event:"))
        .all(|l| l == "event: agentplat.execution_session_event"));
    // AgentPlat's envelope: frames numbered from 1, the session event in `payload`,
    // `id: stream:<session sequence>`.
    let data: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(data
        .iter()
        .all(|f| f["version"] == 1 && f["type"] == "execution_session_event"));
    let frames: Vec<u64> = data
        .iter()
        .map(|f| f["sequence"].as_u64().unwrap())
        .collect();
    assert_eq!(frames, (1..=frames.len() as u64).collect::<Vec<_>>());
    let sequences: Vec<u64> = data
        .iter()
        .map(|f| f["payload"]["sequence"].as_u64().unwrap())
        .collect();
    assert_eq!(sequences, (1..=sequences.len() as u64).collect::<Vec<_>>());
    let ids: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .map(str::to_string)
        .collect();
    let expected_ids: Vec<String> = sequences.iter().map(|n| format!("stream:{n}")).collect();
    assert_eq!(ids, expected_ids);
    let kinds: Vec<&str> = data
        .iter()
        .map(|f| f["payload"]["type"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"intervention_applied"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"session_reconciled"));
}

/// Everything is in the database: a restart between the request and the resume
/// loses nothing.
#[tokio::test]
async fn pending_intervention_survives_a_restart() {
    let h = Harness::legacy().await;
    let (_, room, session, revision, gate) = park(&h, "task-restart", config("m-rs", "ask")).await;
    let (status, _) = request(&h, &room, &session, revision, "op-rs", "stop", "pre_action").await;
    assert_eq!(status, 202);
    let h = h.restart().await;
    assert_eq!(
        intervention(&get_session(&h, &room, &session).await, "op-rs")["status"],
        "pending"
    );
    approve(&h, &gate, true).await;
    let doc = wait_terminal(&h, &room, &session).await;
    assert_eq!(doc["status"], "canceled");
    assert_eq!(intervention(&doc, "op-rs")["status"], "applied");
}

#[tokio::test]
async fn without_execution_the_routes_are_absent() {
    let h = Harness::with(TestServerOptions {
        execution: false,
        ..crate::common::legacy_options()
    })
    .await;
    let (status, body) = h.get("/api/capabilities").await;
    assert_eq!(status, 200);
    let caps = body["capabilities"].as_array().unwrap();
    assert!(
        !caps
            .iter()
            .any(|c| c == "execution" || c == "execution_event_stream"),
        "{body}"
    );
    let answer = invoke(&h, "task-none", config("m", "allow")).await;
    assert_eq!(answer["status"], "completed");
    assert!(answer.get("execution").is_none(), "{answer}");
    let (status, body) = h
        .get("/api/rooms/room-task-none/execution-sessions/x")
        .await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "NOT_FOUND");
    assert_eq!(body["error"]["message"], "Route not found");
    let (status, _) = h
        .post(
            "/api/rooms/r/execution-sessions/x/interventions",
            json!({"expectedRevision": 1}),
        )
        .await;
    assert_eq!(status, 404);

    let h = Harness::legacy().await;
    let (_, body) = h.get("/api/capabilities").await;
    let caps = body["capabilities"].as_array().unwrap();
    assert!(caps.iter().any(|c| c == "execution"), "{body}");
}

/// A failed adapter call leaves the claim's lease to expire; a later claim applies the
/// intervention, once (durable retry).
#[tokio::test]
async fn failed_adapter_is_retried_after_the_lease_expires() {
    let h = Harness::legacy().await;
    let mut parameters = config("m-flaky", "ask");
    parameters["agent"]["execution"] = json!({"lease_ms": 1, "fail_apply_attempts": 1});
    let mut script = vec![json!({"tool": "Bash", "args": {"command": "ls"}})];
    script.extend((1..=30).map(|n| json!({"say": format!("step {n}")})));
    parameters["agent"]["script"] = Value::Array(script);
    let (_, room, session, revision, gate) = park(&h, "task-flaky", parameters).await;
    let (status, _) = request(
        &h, &room, &session, revision, "op-flaky", "be brief", "pre_step",
    )
    .await;
    assert_eq!(status, 202);
    approve(&h, &gate, true).await;
    let doc = wait_terminal(&h, &room, &session).await;
    assert_eq!(doc["status"], "completed", "{doc}");
    let item = intervention(&doc, "op-flaky");
    assert_eq!(item["status"], "applied");
    assert_eq!(item["attempts"], 2, "one failed attempt, one retry: {doc}");
    assert_eq!(events_of(&doc, "intervention_claimed").len(), 2);
    let applied = events_of(&doc, "intervention_applied");
    assert_eq!(applied.len(), 1);
    assert_eq!(applied[0]["details"]["attempts"], 2);
    let step = applied[0]["details"]["step"].as_u64().unwrap();
    let turns = h.turns("task-flaky").await;
    let output = turns["turns"][1]["output"].as_str().unwrap().to_string();
    let injected: Vec<&str> = output
        .lines()
        .filter(|l| l.contains("(instruction: be brief)"))
        .collect();
    assert_eq!(injected.len(), 1, "{output}");
    assert!(injected[0].ends_with(&format!("step {step}")), "{output}");
}

/// Every error of the execution routes is in AgentPlat's envelope, the shared auth
/// layer's 401 included.
#[tokio::test]
async fn execution_errors_are_agentplat_shaped() {
    let h = Harness::legacy().await;
    let answer = invoke(&h, "task-errors", config("m", "allow")).await;
    let (room, session, _) = execution_of(&answer);
    let response = h
        .http
        .get(h.url(&session_path(&room, &session)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "UNAUTHORIZED", "{body}");
    assert_eq!(body["error"]["gatehouseCode"], "UNAUTHORIZED");
    let response = h
        .http
        .get(format!(
            "{}{}",
            h.server.base_url,
            session_path(&room, &session)
        ))
        .header("Authorization", h.server.authorization())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "BAD_REQUEST", "{body}");
    let (status, body) = h
        .get(&format!(
            "{}/events?after=soon",
            session_path(&room, &session)
        ))
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], "VALIDATION_ERROR", "{body}");
    assert_eq!(
        body["error"]["message"],
        "Execution session event sequence is invalid"
    );
    let response = h
        .http
        .delete(h.url(&session_path(&room, &session)))
        .header("Authorization", h.server.authorization())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 405);
    let body: Value = response.json().await.unwrap();
    assert!(body["error"]["message"].is_string(), "{body}");
    let (status, body) = h
        .post(
            &format!("{}/interventions", session_path(&room, &session)),
            json!({"expectedRevision": 1, "operationId": " ", "instruction": "stop", "checkpoint": "pre_step"}),
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("operationId"),
        "{body}"
    );
    let (status, body) = h
        .post(
            &format!("{}/interventions", session_path(&room, &session)),
            json!({"expectedRevision": 1, "operationId": "x", "instruction": "stop", "checkpoint": "mid_step"}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "VALIDATION_ERROR");
    assert_eq!(
        body["error"]["message"],
        "Run intervention checkpoint is invalid"
    );
}

/// A session whose run attempt stopped holding it (its server died or stalled) is
/// reconciled by the reconciler of any instance, on every backend: `failed` with the
/// reason, its interventions rejected with it; a parked (paused) one is left to resume.
#[tokio::test]
async fn an_expired_run_hold_is_reconciled_on_every_backend() {
    let h = Harness::legacy().await;
    let (_, room, parked, revision, _) = park(&h, "task-parked", config("m", "ask")).await;
    let (status, _) = request(
        &h,
        &room,
        &parked,
        revision,
        "op-wait",
        "stop",
        "pre_action",
    )
    .await;
    assert_eq!(status, 202);
    let exec = h.server.server.state().executions.clone();
    // A run attempt that opened its session and then stopped renewing its hold.
    let hold = gatehouse_server::execution::RunHold::new(Duration::from_millis(300), None);
    let orphan = exec
        .open(
            &gatehouse_server::execution::OpenSession {
                tenant_id: h.server.project_id.clone(),
                room_id: "room-orphan".into(),
                run_id: "run-in-flight".into(),
                task_id: "task-orphan".into(),
                participant_id: "agent".into(),
                agent_revision_id: "draft:00".into(),
                agent_revision_digest: "sha256:00".into(),
                predecessor_session_id: None,
                runtime_profile: None,
                authority_revision: None,
                role_revision: None,
                protected: false,
                turn_id: None,
            },
            &hold,
        )
        .await
        .unwrap();
    let (status, _) = request(
        &h,
        "room-orphan",
        &orphan.session_id,
        orphan.revision,
        "op-o",
        "stop",
        "pre_step",
    )
    .await;
    assert_eq!(status, 202);
    let doc = wait_terminal(&h, "room-orphan", &orphan.session_id).await;
    assert_eq!(doc["status"], "failed");
    assert_eq!(
        doc["outcome"]["reason"],
        gatehouse_server::execution::ORPHAN_REASON
    );
    assert_eq!(intervention(&doc, "op-o")["status"], "rejected");
    // Requests against it now get the not-active conflict.
    let (status, body) = request(
        &h,
        "room-orphan",
        &orphan.session_id,
        doc["revision"].as_u64().unwrap(),
        "op-late",
        "stop",
        "pre_step",
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["gatehouseCode"], "SESSION_NOT_ACTIVE");
    let doc = get_session(&h, &room, &parked).await;
    assert_eq!(doc["status"], "paused");
    assert_eq!(intervention(&doc, "op-wait")["status"], "pending");
}
