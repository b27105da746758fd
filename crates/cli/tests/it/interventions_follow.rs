//! `gatehouse interventions events --follow` on a session that already ended (AgentPlat
//! keeps its stream open after the last event: the command must still end), the 403
//! hint saying truthfully where the host took the requester from, and the command
//! reading both shapes of Gatehouse's server (AgentPlat's on the root paths, Gatehouse's
//! under `/api`).

use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::time::Duration;

use crate::common::{invoke_parked, text};
use crate::replay::{Exchange, Replay, Route, Scenario};
use gatehouse_server::testing::{spawn, TestServer, TestServerOptions};
use gatehouse_wire::execution::{ExecutionEvent, ExecutionSession};
use serde_json::{json, Value};

const ROOM: &str = "room-1";
const SESSION: &str = "exec-1";
const TOKEN: &str = "token-1";
const TENANT: &str = "tenant-1";

/// One exchange the fake AgentPlat host answers, for the session above, with a Bearer
/// token and the tenant header.
fn exchange(route: Route, query: &[(&str, &str)], status: u16, response: Value) -> Exchange {
    let (method, suffix, content_type) = match route {
        Route::GetSession => ("GET", "", "application/json"),
        Route::RequestIntervention => ("POST", "/interventions", "application/json"),
        Route::ListEvents => ("GET", "/events", "application/json"),
        Route::StreamEvents => ("GET", "/events/stream", "text/event-stream; charset=utf-8"),
    };
    let stays_open = route == Route::StreamEvents;
    Exchange {
        index: 0,
        route,
        room: ROOM.to_string(),
        session: SESSION.to_string(),
        method: method.to_string(),
        path: format!("/rooms/{ROOM}/execution-sessions/{SESSION}{suffix}"),
        query: query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        headers: BTreeMap::from([
            ("authorization".to_string(), format!("Bearer {TOKEN}")),
            ("x-agentplat-tenant-id".to_string(), TENANT.to_string()),
        ]),
        body: None,
        raw_body: None,
        status,
        content_type: content_type.to_string(),
        response,
        stream_end: stays_open.then(|| "client_stopped_reading_after_2.0s".to_string()),
    }
}

/// A completed session as AgentPlat writes it: five events, the last `session_reconciled`.
fn completed_session() -> Value {
    let at = "2026-12-01T04:22:50.000Z";
    let event = |sequence: u64, kind: &str| {
        if sequence == 1 {
            return json!({"sequence": 1, "type": kind, "occurredAt": at});
        }
        if kind == "session_reconciled" {
            return json!({"type": kind, "occurredAt": at, "sequence": sequence});
        }
        json!({"type": kind, "operationId": "op-1", "checkpoint": "pre_step", "occurredAt": at, "sequence": sequence})
    };
    json!({"data": {
        "tenantId": TENANT, "roomId": ROOM, "sessionId": SESSION, "runId": "run-1",
        "taskId": "task-1", "participantId": "agent-1", "revision": 4, "status": "completed",
        "interventions": [{
            "operationId": "op-1", "requestedByParticipantId": "human-1", "instruction": "x",
            "checkpoint": "pre_step", "status": "applied", "attempts": 1, "requestedAt": at,
            "resolvedAt": at, "resolutionReason": "applied"
        }],
        "events": [
            event(1, "session_opened"), event(2, "intervention_requested"),
            event(3, "intervention_claimed"), event(4, "intervention_applied"),
            event(5, "session_reconciled")
        ],
        "createdAt": at, "updatedAt": at
    }})
}

fn scenario(name: &str, exchanges: Vec<Exchange>) -> Scenario {
    Scenario {
        name: name.to_string(),
        file: std::path::PathBuf::from(name),
        exchanges,
    }
}

/// `gatehouse interventions <args>` against an AgentPlat host at `url`, nothing from the
/// environment.
fn agentplat_command(url: &str, args: &[&str]) -> Command {
    let mut cmd = crate::common::gatehouse_without_env();
    cmd.arg("interventions")
        .args(args)
        .args(["--upstream", "agentplat", "--url", url, "--json"]);
    cmd
}

/// [`agentplat_command`] for the fake host's session, with its Bearer token and tenant.
fn fake_host_command(url: &str, args: &[&str]) -> Command {
    let mut cmd = agentplat_command(url, args);
    cmd.args(["--room", ROOM, "--session", SESSION])
        .args(["--api-key", TOKEN, "--tenant", TENANT]);
    cmd
}

async fn output(mut cmd: Command) -> Output {
    let child = tokio::task::spawn_blocking(move || cmd.output().unwrap());
    tokio::time::timeout(Duration::from_secs(20), child)
        .await
        .expect("the command ended")
        .unwrap()
}

fn sequences(stdout: &str) -> Vec<u64> {
    stdout
        .lines()
        .map(|line| {
            serde_json::from_str::<ExecutionEvent>(line)
                .unwrap()
                .sequence
        })
        .collect()
}

/// `events --follow --after <after>` against a host whose stream stays open and silent
/// on the ended session above: the command's stdout.
async fn follow_ended_session(after: &str) -> String {
    let host = Replay::start(&scenario(
        "ended-session",
        vec![
            exchange(Route::StreamEvents, &[("after", after)], 200, json!("")),
            exchange(Route::GetSession, &[], 200, completed_session()),
        ],
    ))
    .await;
    let args = ["events", "--follow", "--after", after];
    let out = output(fake_host_command(&host.url, &args)).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(host.mismatches(), Vec::<String>::new());
    assert_eq!(host.remaining(), 0, "the session was read");
    text(&out.stdout)
}

/// `--follow --after <last>` on an ended session: AgentPlat's stream stays open and
/// sends nothing; the command reads the session when the stream goes quiet and ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn following_an_ended_session_after_its_last_event_ends() {
    assert_eq!(follow_ended_session("5").await, "");
}

/// A stream that stays silent on an ended session: the command shows the events the
/// session holds past `--after` (its log is complete) and ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_stream_of_an_ended_session_shows_the_rest_of_its_log() {
    assert_eq!(sequences(&follow_ended_session("3").await), [4, 5]);
}

/// On a Bearer host the requester is the token's identity: the 403 hint says so, and
/// does not send the user to `--participant`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_403_on_a_bearer_host_names_the_key_as_the_requester() {
    let refused = json!({"error": {"code": "FORBIDDEN", "message": "Human participant lacks run.intervene permission"}});
    let mut request = exchange(Route::RequestIntervention, &[], 403, refused);
    request.body = Some(json!({
        "expectedRevision": 0, "operationId": "op-1", "requestedByParticipantId": "human-2",
        "instruction": "x", "checkpoint": "pre_step"
    }));
    let host = Replay::start(&scenario("bearer-403", vec![request])).await;
    let args = [
        "request",
        "--instruction",
        "x",
        "--expected-revision",
        "0",
        "--operation-id",
        "op-1",
        "--participant",
        "human-2",
    ];
    let out = output(fake_host_command(&host.url, &args)).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    assert!(
        stderr.contains("lacks run.intervene permission"),
        "{stderr}"
    );
    assert!(
        stderr.contains("takes the requester from the API key's identity, not from --participant"),
        "{stderr}"
    );
    assert_eq!(host.mismatches(), Vec::<String>::new());
}

/// A host without key authentication (Gatehouse's server with AgentPlat's header-only
/// tenant auth) takes the requester from `--participant`: the 403 hint says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_403_without_a_key_names_participant_as_the_requester() {
    let server = spawn(TestServerOptions {
        agentplat_header_auth: true,
        ..Default::default()
    })
    .await;
    let (room, session, _) = parked_session(&server, "task-hint").await;
    let args = [
        "request",
        "--instruction",
        "x",
        "--room",
        &room,
        "--session",
        &session,
        "--tenant",
        &server.project_id,
    ];
    let out = output(agentplat_command(&server.base_url, &args)).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    assert!(
        stderr.contains("without --api-key the host takes the requester from --participant"),
        "{stderr}"
    );
    // Naming the participant, the same request is accepted.
    let mut named = args.to_vec();
    named.extend(["--participant", "human-1"]);
    let out = output(agentplat_command(&server.base_url, &named)).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    server.shutdown().await;
}

/// A turn parked at its approval gate: (room, session, gate).
async fn parked_session(server: &TestServer, task: &str) -> (String, String, String) {
    let agent = json!({
        "llm": {"model": "m-follow"},
        "runner": {"permissions": {"default": "ask"}},
        "script": [{"tool": "Bash", "args": {"command": "ls"}}, {"say": "done"}]
    });
    let answer = invoke_parked(server, task, agent, Vec::new()).await;
    let execution = answer
        .execution
        .expect("the turn opened an execution session");
    (
        execution.room_id,
        execution.session_id,
        answer.interaction_ids[0].clone(),
    )
}

/// The command reads a session and follows its events alike on Gatehouse's `/api`
/// paths and on AgentPlat's root paths of the same server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_reads_both_shapes_of_the_server() {
    let server = spawn(TestServerOptions::default()).await;
    let (room, session, gate) = parked_session(&server, "task-both").await;
    crate::common::client(&server)
        .interactions()
        .respond(&gate, &gatehouse_client::Answer::approve())
        .await
        .unwrap();
    let shapes = [
        vec![
            "--upstream",
            "gatehouse",
            "--project",
            server.project_id.as_str(),
        ],
        vec![
            "--upstream",
            "agentplat",
            "--tenant",
            server.project_id.as_str(),
        ],
    ];
    let mut seen = Vec::new();
    for shape in &shapes {
        let run = |args: &[&str]| {
            let mut cmd = crate::common::gatehouse_without_env();
            cmd.arg("interventions")
                .args(args)
                .args(["--room", &room, "--session", &session])
                .args([
                    "--url",
                    &server.base_url,
                    "--api-key",
                    &server.api_key,
                    "--json",
                ])
                .args(shape);
            cmd
        };
        let out = output(run(&["events", "--follow"])).await;
        assert_eq!(
            out.status.code(),
            Some(0),
            "{shape:?}: {}",
            text(&out.stderr)
        );
        let followed = sequences(&text(&out.stdout));
        let out = output(run(&["get"])).await;
        assert_eq!(
            out.status.code(),
            Some(0),
            "{shape:?}: {}",
            text(&out.stderr)
        );
        let doc: ExecutionSession = serde_json::from_slice(&out.stdout).unwrap();
        assert!(doc.status.is_terminal(), "{shape:?}: {doc:?}");
        let listed: Vec<u64> = doc.events.iter().map(|e| e.sequence).collect();
        assert_eq!(followed, listed, "{shape:?}");
        seen.push((listed, doc.revision, doc.status));
    }
    assert_eq!(seen[0], seen[1]);
    server.shutdown().await;
}
