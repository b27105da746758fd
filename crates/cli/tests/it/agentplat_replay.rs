//! Upstream conformance: the Rust client and the `gatehouse` command against AgentPlat's
//! recorded Rooms API exchanges (`gatehouse_fixtures`, `agentplat/`), replayed by a
//! loopback server (`replay/`). Every scenario file is driven twice, through the client
//! (`Client::builder(url).upstream(AgentPlat)`, the tenant and Bearer key of each
//! recorded request, the requester of its body) and through the command
//! (`--upstream agentplat --tenant ... --participant ...`). Each recorded request a client
//! can send is checked as sent (path, query, tenant header, `Authorization`, body); the
//! others (an empty or malformed body, `after=abc`, a `Basic` header) still get their
//! recorded answer, which must come out typed. Recorded ids and timestamps differ per
//! file: values are compared with the recording they answer, statuses and codes with
//! AgentPlat's meaning.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::common::text;
use crate::replay::{frames, Exchange, Replay, Route, Scenario};
use futures::StreamExt;
use gatehouse_client::{
    Client, Error, ErrorKind, InterventionRequest, InterventionState, RetryPolicy, Upstream,
};
use gatehouse_wire::error::messages;
use gatehouse_wire::execution::{Checkpoint, ExecutionEvent, ExecutionSession};
use serde_json::Value;

const SUITE: &str = "AgentPlat recorded exchanges (client and CLI replay)";

/// The recorded scenarios, or `None` (the suite is skipped, said once).
fn scenarios() -> Option<Vec<Scenario>> {
    let dir = gatehouse_fixtures::require(gatehouse_fixtures::Upstream::AgentPlat, SUITE)?;
    let scenarios = crate::replay::scenarios(&dir);
    assert!(!scenarios.is_empty(), "no scenario in {}", dir.display());
    Some(scenarios)
}

/// What a client must make of a recorded error answer: AgentPlat's codes and messages
/// (`createRoomsApp`, `RoomExecutionCoordinator`, `headerTenantAuth`).
fn expected_kind(x: &Exchange) -> ErrorKind {
    let (code, message) = x.error().unwrap_or(("", ""));
    match (x.status, code, message) {
        (400, "BAD_REQUEST", m) if m.starts_with("Missing required ") && m.ends_with(" header") => {
            ErrorKind::TenantRejected
        }
        (400, "VALIDATION_ERROR", _) => ErrorKind::Validation,
        (400, _, _) => ErrorKind::Invalid,
        (401, _, _) => ErrorKind::Unauthorized,
        (403, _, _) => ErrorKind::Forbidden,
        (404, _, messages::ROUTE_NOT_FOUND) => ErrorKind::CapabilityUnavailable,
        (404, _, _) => ErrorKind::NotFound,
        (409, _, messages::REVISION_CONFLICT | messages::CHANGED_CONCURRENTLY) => {
            ErrorKind::RevisionConflict
        }
        (409, _, messages::OPERATION_CONFLICT) => ErrorKind::OperationConflict,
        (409, _, messages::INTERVENTION_LIMIT) => ErrorKind::InterventionLimit,
        (409, _, messages::SESSION_NOT_ACTIVE | messages::RUN_NOT_RUNNING) => {
            ErrorKind::SessionNotActive
        }
        (409, _, _) => ErrorKind::Conflict,
        _ => ErrorKind::Server,
    }
}

/// The `gatehouse` exit code of an error kind (crates/cli/README.md).
fn exit_code(kind: ErrorKind) -> i32 {
    match kind {
        ErrorKind::RevisionConflict | ErrorKind::OperationConflict | ErrorKind::Conflict => 3,
        ErrorKind::NotFound => 4,
        ErrorKind::CapabilityUnavailable => 5,
        ErrorKind::Forbidden => 6,
        ErrorKind::TenantRejected => 7,
        ErrorKind::Validation | ErrorKind::Invalid => 8,
        ErrorKind::SessionNotActive => 9,
        ErrorKind::InterventionLimit => 10,
        _ => 1,
    }
}

/// The session events a recorded stream carries, and whether it ends with a failure.
fn recorded_stream(x: &Exchange) -> (Vec<(u64, String)>, bool) {
    let text = x.response.as_str().unwrap_or_default();
    let mut events = Vec::new();
    let mut failed = false;
    for frame in frames(text) {
        assert_eq!(frame.data["version"], 1, "{}", x.path);
        match frame.data["type"].as_str() {
            Some("execution_session_event") => events.push((
                frame.data["payload"]["sequence"].as_u64().unwrap(),
                frame.data["payload"]["type"].as_str().unwrap().to_string(),
            )),
            Some("failed") => failed = true,
            _ => {}
        }
    }
    (events, failed)
}

fn event_keys(events: &[ExecutionEvent]) -> Vec<(u64, String)> {
    events
        .iter()
        .map(|e| (e.sequence, e.event_type.as_str().to_string()))
        .collect()
}

fn recorded_event_keys(events: &Value) -> Vec<(u64, String)> {
    events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["sequence"].as_u64().unwrap(),
                e["type"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A session read by the client is the recorded one.
fn check_session(x: &Exchange, session: &ExecutionSession, recorded: &Value) {
    let at = format!("{} exchange #{}", x.path, x.index);
    assert_eq!(
        session.tenant_id,
        recorded["tenantId"].as_str().unwrap(),
        "{at}"
    );
    assert_eq!(
        session.room_id,
        recorded["roomId"].as_str().unwrap(),
        "{at}"
    );
    assert_eq!(
        session.session_id,
        recorded["sessionId"].as_str().unwrap(),
        "{at}"
    );
    assert_eq!(session.run_id, recorded["runId"].as_str().unwrap(), "{at}");
    assert_eq!(
        Some(session.revision),
        recorded["revision"].as_u64(),
        "{at}"
    );
    assert_eq!(
        session.status.as_str(),
        recorded["status"].as_str().unwrap(),
        "{at}"
    );
    assert_eq!(
        session.agent_revision_id.as_deref(),
        recorded["agentRevisionId"].as_str(),
        "{at}"
    );
    assert_eq!(
        session.agent_revision_digest.as_deref(),
        recorded["agentRevisionDigest"].as_str(),
        "{at}"
    );
    let interventions: Vec<(String, String, String)> = session
        .interventions
        .iter()
        .map(|i| {
            (
                i.operation_id.clone(),
                i.status.as_str().to_string(),
                i.checkpoint.as_str().to_string(),
            )
        })
        .collect();
    let recorded_interventions: Vec<(String, String, String)> = recorded["interventions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["operationId"].as_str().unwrap().to_string(),
                i["status"].as_str().unwrap().to_string(),
                i["checkpoint"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(interventions, recorded_interventions, "{at}");
    assert_eq!(
        event_keys(&session.events),
        recorded_event_keys(&recorded["events"]),
        "{at}"
    );
}

/// The state a recorded intervention status means for the client.
fn expected_state(recorded_session: &Value, operation_id: &str) -> &'static str {
    let item = recorded_session["interventions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["operationId"] == operation_id)
        .expect("the answered session holds the intervention");
    match item["status"].as_str().unwrap() {
        "pending" => "requested",
        "dispatching" => "dispatching",
        "rejected" => "rejected",
        // Applied only with the persisted event (else still not applied).
        "applied"
            if recorded_session["events"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| {
                    e["type"] == "intervention_applied" && e["operationId"] == operation_id
                }) =>
        {
            "applied"
        }
        _ => "dispatching",
    }
}

fn state_name(state: &InterventionState) -> &'static str {
    match state {
        InterventionState::Requested => "requested",
        InterventionState::Dispatching { .. } => "dispatching",
        InterventionState::Applied { .. } => "applied",
        InterventionState::Rejected { .. } => "rejected",
        _ => "unknown",
    }
}

/// The client a recorded request was made with: AgentPlat, its tenant, its Bearer key.
fn client_for(url: &str, x: &Exchange) -> Client {
    let mut builder = Client::builder(url)
        .upstream(Upstream::AgentPlat)
        .retry_policy(RetryPolicy::none())
        .timeout(Duration::from_secs(10));
    if let Some(tenant) = x.tenant().filter(|t| !t.trim().is_empty()) {
        builder = builder.tenant(tenant);
    }
    if let Some(token) = x.bearer() {
        builder = builder.api_key(token);
    }
    builder.build().unwrap()
}

/// The intervention a recorded body asks for (what the client can send of it).
fn intervention_request(x: &Exchange) -> InterventionRequest {
    let expected_revision = x
        .body
        .as_ref()
        .and_then(|b| b["expectedRevision"].as_u64())
        .unwrap_or(0);
    let checkpoint = Checkpoint::from_wire(x.body_str("checkpoint").unwrap_or("pre_step"));
    let mut request = InterventionRequest::new(
        expected_revision,
        x.body_str("instruction").unwrap_or("x"),
        checkpoint,
    );
    if let Some(operation_id) = x.body_str("operationId") {
        request = request.operation_id(operation_id);
    }
    if let Some(participant) = x.body_str("requestedByParticipantId") {
        request = request.requested_by(participant);
    }
    request
}

fn check_error(x: &Exchange, err: &Error) {
    let want = expected_kind(x);
    assert_eq!(
        err.kind(),
        want,
        "{} exchange #{} ({} {:?}): {err}",
        x.path,
        x.index,
        x.status,
        x.error()
    );
    if let Some(status) = err.http_status() {
        assert_eq!(status, x.status, "{err}");
    }
    if let Some((_, message)) = x.error() {
        if want != ErrorKind::CapabilityUnavailable {
            assert!(err.to_string().contains(message), "{err} lacks {message:?}");
        }
    }
    assert!(!err.is_retryable(), "{err}");
}

/// Drive the client through one exchange.
async fn client_exchange(replay: &Replay, x: &Exchange, answered_before: usize) {
    let client = client_for(&replay.url, x);
    let execution = client.execution();
    let ok = (200..300).contains(&x.status) && x.route != Route::StreamEvents;
    match x.route {
        Route::GetSession => match execution.get_session(&x.room, &x.session).await {
            Ok(session) if ok => check_session(x, &session, &x.response["data"]),
            Err(err) if !ok => check_error(x, &err),
            other => panic!("{} #{}: {other:?}", x.path, x.index),
        },
        Route::ListEvents => match match x.query.get("after") {
            Some(after) if x.after().is_none() => {
                execution
                    .events_after_text(&x.room, &x.session, after)
                    .await
            }
            _ => execution.events(&x.room, &x.session, x.after()).await,
        } {
            Ok(events) if ok => assert_eq!(
                event_keys(&events),
                recorded_event_keys(&x.response["data"]),
                "#{}",
                x.index
            ),
            Err(err) if !ok => check_error(x, &err),
            other => panic!("{} #{}: {other:?}", x.path, x.index),
        },
        Route::RequestIntervention => {
            let request = intervention_request(x);
            let operation_id = request.operation_id.clone().unwrap_or_default();
            match execution
                .request_intervention(&x.room, &x.session, request)
                .await
            {
                Ok(handle) if ok => {
                    let recorded = &x.response["data"];
                    assert_eq!(handle.operation_id(), operation_id);
                    check_session(x, handle.session(), recorded);
                    assert_eq!(
                        state_name(&handle.state()),
                        expected_state(recorded, &operation_id),
                        "#{}",
                        x.index
                    );
                }
                Err(err) if !ok => check_error(x, &err),
                other => panic!("{} #{}: {other:?}", x.path, x.index),
            }
        }
        Route::StreamEvents => client_stream(replay, x, &client, answered_before).await,
    }
}

async fn client_stream(replay: &Replay, x: &Exchange, client: &Client, answered_before: usize) {
    let mut stream = client
        .execution()
        .watch_events(&x.room, &x.session, x.after());
    if x.status != 200 {
        let first = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("a refused stream ends at once");
        match first {
            Some(Err(err)) => check_error(x, &err),
            other => panic!("{} #{}: {other:?}", x.path, x.index),
        }
        assert!(stream.next().await.is_none(), "one error ends the stream");
        return;
    }
    let (events, failed) = recorded_stream(x);
    let mut seen = Vec::new();
    if x.stays_open() {
        for _ in 0..events.len() {
            let event = tokio::time::timeout(Duration::from_secs(10), stream.next())
                .await
                .expect("a recorded frame arrives")
                .expect("the stream stays open")
                .expect("a session event");
            seen.push((event.sequence, event.event_type.as_str().to_string()));
        }
        if events.is_empty() {
            // Nothing was recorded on this open stream: nothing may arrive. (A negative
            // check: a slow machine can only make it pass, never fail.)
            let nothing = tokio::time::timeout(Duration::from_millis(300), stream.next()).await;
            assert!(nothing.is_err(), "{} #{}: {nothing:?}", x.path, x.index);
        }
        replay.wait_answered(answered_before + 1).await;
    } else {
        let items: Vec<_> =
            tokio::time::timeout(Duration::from_secs(10), stream.collect::<Vec<_>>())
                .await
                .expect("a stream the server closed ends");
        let mut items = items.into_iter();
        for item in items.by_ref().take(events.len()) {
            let event = item.expect("a session event");
            seen.push((event.sequence, event.event_type.as_str().to_string()));
        }
        let rest: Vec<_> = items.collect();
        if failed {
            match &rest[..] {
                [Err(err @ Error::StreamFailed { .. })] => {
                    assert!(err.to_string().contains("Stream failed"), "{err}")
                }
                other => panic!(
                    "{} #{}: expected StreamFailed, got {other:?}",
                    x.path, x.index
                ),
            }
        } else {
            assert!(rest.is_empty(), "{} #{}: {rest:?}", x.path, x.index);
        }
    }
    assert_eq!(seen, events, "{} #{}", x.path, x.index);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_reads_every_recorded_exchange() {
    let Some(scenarios) = scenarios() else {
        return;
    };
    let mut exchanges = 0;
    for scenario in &scenarios {
        let replay = Replay::start(scenario).await;
        for (n, x) in scenario.exchanges.iter().enumerate() {
            client_exchange(&replay, x, n).await;
            replay.wait_answered(n + 1).await;
            exchanges += 1;
        }
        assert_eq!(
            replay.mismatches(),
            Vec::<String>::new(),
            "{}",
            scenario.name
        );
        assert_eq!(replay.remaining(), 0, "{}", scenario.name);
    }
    assert!(exchanges > 0);
}

/// On a host without the execution service, the first route-not-found is learned: the
/// same client then refuses every execution call without a request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_absent_execution_service_is_learned_from_the_first_answer() {
    let Some(scenarios) = scenarios() else {
        return;
    };
    let absent = scenarios.iter().find(|s| {
        s.exchanges.first().is_some_and(|x| {
            x.route == Route::GetSession
                && x.error() == Some(("NOT_FOUND", messages::ROUTE_NOT_FOUND))
        })
    });
    let Some(scenario) = absent else {
        panic!("no scenario records a host without the execution service");
    };
    let replay = Replay::start(scenario).await;
    let first = &scenario.exchanges[0];
    let client = client_for(&replay.url, first);
    let err = client
        .execution()
        .get_session(&first.room, &first.session)
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::CapabilityUnavailable { .. }),
        "{err:?}"
    );
    let again = client
        .execution()
        .request_intervention(
            &first.room,
            &first.session,
            InterventionRequest::new(0, "x", Checkpoint::PreStep),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(again, Error::CapabilityUnavailable { .. }),
        "{again:?}"
    );
    assert_eq!(replay.answered(), 1, "the second call was not sent");
}

// ---------------------------------------------------------------------------------------
// The command
// ---------------------------------------------------------------------------------------

/// `gatehouse interventions <args>` with the recorded request's settings as flags, and
/// none from the environment.
fn command(url: &str, x: &Exchange, args: &[String]) -> Command {
    let mut cmd = crate::common::gatehouse_without_env();
    cmd.arg("interventions").args(args);
    cmd.args(["--room", x.room.as_str(), "--session", x.session.as_str()]);
    cmd.args(["--upstream", "agentplat", "--url", url, "--json"]);
    if let Some(tenant) = x.tenant().filter(|t| !t.trim().is_empty()) {
        cmd.args(["--tenant", tenant]);
    }
    if let Some(token) = x.bearer() {
        cmd.args(["--api-key", token]);
    }
    if let Some(participant) = x.body_str("requestedByParticipantId") {
        cmd.args(["--participant", participant]);
    }
    cmd
}

/// The arguments of the command making a recorded request.
fn cli_args(x: &Exchange) -> Vec<String> {
    let mut args: Vec<String> = Vec::new();
    match x.route {
        Route::GetSession => args.push("get".into()),
        Route::ListEvents => {
            args.push("events".into());
            // Any recorded `after` is passed as given (`-1` included).
            if let Some(after) = x.query.get("after") {
                args.extend(["--after".into(), after.clone()]);
            }
        }
        Route::StreamEvents => {
            args.extend(["events".into(), "--follow".into()]);
            if let Some(after) = x.after() {
                args.extend(["--after".into(), after.to_string()]);
            }
        }
        Route::RequestIntervention => {
            let request = intervention_request(x);
            args.extend([
                "request".into(),
                "--instruction".into(),
                request.instruction.clone(),
                "--checkpoint".into(),
                request.checkpoint.as_str().to_string(),
                "--expected-revision".into(),
                request.expected_revision.to_string(),
            ]);
            if let Some(operation_id) = &request.operation_id {
                args.extend(["--operation-id".into(), operation_id.clone()]);
            }
        }
    }
    args
}

/// Run the command for one exchange and check its exit code and output.
async fn cli_exchange(replay: &Replay, x: &Exchange, answered_before: usize) {
    let mut args = cli_args(x);
    let open_stream = x.route == Route::StreamEvents && x.status == 200 && x.stays_open();
    let (events, failed) = if x.route == Route::StreamEvents && x.status == 200 {
        recorded_stream(x)
    } else {
        (Vec::new(), false)
    };
    if open_stream && !events.is_empty() {
        args.extend(["--max-events".into(), events.len().to_string()]);
    }
    let mut cmd = command(&replay.url, x, &args);
    let out: Output = if open_stream && events.is_empty() {
        // Nothing was recorded on an open stream: stop the command once it was answered.
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        replay.wait_answered(answered_before + 1).await;
        child.kill().unwrap();
        let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
            .await
            .unwrap();
        assert!(
            text(&out.stdout).trim().is_empty(),
            "#{}: {}",
            x.index,
            text(&out.stdout)
        );
        return;
    } else {
        tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap()
    };
    let at = format!(
        "{} {} #{}: stdout {} stderr {}",
        x.method,
        x.path,
        x.index,
        text(&out.stdout),
        text(&out.stderr)
    );
    let success = (200..300).contains(&x.status) && !failed;
    let want_code = if success {
        0
    } else if failed {
        exit_code(ErrorKind::StreamFailed)
    } else {
        exit_code(expected_kind(x))
    };
    assert_eq!(out.status.code(), Some(want_code), "{at}");
    if !success {
        assert!(text(&out.stderr).starts_with("error: "), "{at}");
        if let (Some((_, message)), false) = (x.error(), failed) {
            if expected_kind(x) != ErrorKind::CapabilityUnavailable {
                assert!(text(&out.stderr).contains(message), "{at}");
            }
        }
    }
    let stdout = text(&out.stdout);
    match x.route {
        Route::GetSession if success => {
            let session: ExecutionSession = serde_json::from_str(&stdout).expect(&at);
            check_session(x, &session, &x.response["data"]);
        }
        Route::ListEvents if success => {
            let listed: Vec<ExecutionEvent> = serde_json::from_str(&stdout).expect(&at);
            assert_eq!(
                event_keys(&listed),
                recorded_event_keys(&x.response["data"]),
                "{at}"
            );
        }
        Route::RequestIntervention if success => {
            let shown: Value = serde_json::from_str(&stdout).expect(&at);
            let operation_id = x.body_str("operationId").unwrap();
            assert_eq!(shown["operation_id"], operation_id, "{at}");
            assert_eq!(
                shown["state"],
                expected_state(&x.response["data"], operation_id),
                "{at}"
            );
            assert_eq!(
                shown["session_revision"], x.response["data"]["revision"],
                "{at}"
            );
        }
        Route::StreamEvents if x.status == 200 => {
            let seen: Vec<ExecutionEvent> = stdout
                .lines()
                .map(|l| serde_json::from_str(l).expect(&at))
                .collect();
            assert_eq!(event_keys(&seen), events, "{at}");
        }
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_makes_every_recorded_request_and_exits_with_its_code() {
    let Some(scenarios) = scenarios() else {
        return;
    };
    for scenario in &scenarios {
        let replay = Replay::start(scenario).await;
        for (n, x) in scenario.exchanges.iter().enumerate() {
            cli_exchange(&replay, x, n).await;
            replay.wait_answered(n + 1).await;
        }
        assert_eq!(
            replay.mismatches(),
            Vec::<String>::new(),
            "{}",
            scenario.name
        );
        assert_eq!(replay.remaining(), 0, "{}", scenario.name);
    }
}
