//! The client against the reference control plane (gatehouse-server), over real HTTP.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use futures::StreamExt;
use gatehouse_client::{Answer, Client, Error, Operation, WatchStream, WatchUpdate};
use gatehouse_server::testing::TestServerOptions;
use gatehouse_wire::capabilities::Capability;
use gatehouse_wire::interaction::{
    CancelStaleRequest, CreateInteractionRequest, InteractionData, InteractionKind,
    InteractionQuery, InteractionRequest, InteractionStatus, Order, Resolution, TransitionRequest,
    Verdict, WatchEvent, Windowing,
};

fn create_request(session: &str, turn: &str, token: &str) -> CreateInteractionRequest {
    CreateInteractionRequest {
        session_id: session.to_string(),
        turn_id: Some(turn.to_string()),
        token: token.to_string(),
        kind: InteractionKind::UserApproval,
        data: Some(InteractionData {
            request: Some(InteractionRequest {
                tool: Some("Bash".into()),
                args: Some(serde_json::json!({"command": "echo hi"})),
                tool_call_id: Some(format!("toolu-{token}")),
                extra: Default::default(),
            }),
            ..Default::default()
        }),
        flags: None,
        tags: None,
        meta: None,
    }
}

/// Next update matching `pred`, within a bound (no sleeps: the bound only stops a hang).
async fn next_matching(
    watch: &mut WatchStream,
    pred: impl Fn(&WatchUpdate) -> bool,
) -> WatchUpdate {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let update = watch
                .next()
                .await
                .expect("watch ended")
                .expect("watch failed");
            if pred(&update) {
                return update;
            }
        }
    })
    .await
    .expect("no matching watch update in time")
}

fn is_status(update: &WatchUpdate, wanted: InteractionStatus) -> bool {
    matches!(update, WatchUpdate::Event(WatchEvent::Interaction { status, .. }) if *status == wanted)
}

#[tokio::test]
async fn every_interaction_operation_over_real_http() {
    let server = reference_server_with(TestServerOptions {
        run_dispatcher: false,
        ..Default::default()
    })
    .await;
    let c = client_for(&server);
    let i = c.interactions();

    // Capabilities (C5).
    let caps = c.capabilities().get().await.unwrap();
    assert!(caps.has(Capability::Interactions) && caps.has(Capability::InteractionWatch));
    c.capabilities().require(Capability::Runs).await.unwrap();

    // create: idempotent on (project, session, token).
    let row = i
        .create(&create_request("s-ops", "t-1", "tok-a"))
        .await
        .unwrap();
    assert_eq!(row.status, Some(InteractionStatus::Pending));
    let again = i
        .create(&create_request("s-ops", "t-1", "tok-a"))
        .await
        .unwrap();
    assert_eq!(again.id, row.id);
    let id = row.id.clone().unwrap();

    // get.
    let got = i.get(&id).await.unwrap();
    assert_eq!(got.token, "tok-a");
    assert_eq!(got.request_tool_call_id(), Some("toolu-tok-a"));

    // query with filters.
    for token in ["tok-b", "tok-c", "tok-d", "tok-e"] {
        i.create(&create_request("s-ops", "t-1", token))
            .await
            .unwrap();
    }
    i.create(&create_request("s-other", "t-9", "tok-z"))
        .await
        .unwrap();
    let query = InteractionQuery {
        session_id: Some("s-ops".into()),
        kind: Some(InteractionKind::UserApproval),
        status: Some(InteractionStatus::Pending),
        turn_id: Some("t-1".into()),
        ..Default::default()
    };
    let page = i
        .query(
            &query,
            Some(&Windowing {
                limit: Some(2),
                ..Default::default()
            }),
        )
        .await
        .unwrap();
    assert_eq!(page.count, 2);
    assert_eq!(page.interactions.len(), 2);

    // query_all walks every page.
    let all = i
        .query_all_with(
            &query,
            Windowing {
                limit: Some(2),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let mut tokens: Vec<_> = all.iter().map(|r| r.token.clone()).collect();
    tokens.sort();
    assert_eq!(tokens, ["tok-a", "tok-b", "tok-c", "tok-d", "tok-e"]);
    let newest_first = i
        .query_all_with(
            &query,
            Windowing {
                limit: Some(3),
                order: Some(Order::Descending),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(newest_first.len(), 5);
    assert_eq!(newest_first[0].token, "tok-e");
    assert_eq!(i.list_pending(Some("s-ops")).await.unwrap().len(), 5);
    assert_eq!(i.list_pending(None).await.unwrap().len(), 6);

    // respond, then a second respond is AlreadyAnswered.
    let answered = i
        .respond(&id, &Answer::deny("not today").tool_call_id("toolu-tok-a"))
        .await
        .unwrap();
    assert_eq!(answered.status, Some(InteractionStatus::Responded));
    let stored = &answered.data.as_ref().unwrap().resolution.as_ref().unwrap()["answer"];
    assert_eq!(
        stored,
        &serde_json::json!({"approved": false, "message": "not today", "tool_call_id": "toolu-tok-a"})
    );
    let err = i.respond(&id, &Answer::approve()).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::AlreadyAnswered {
                operation: Operation::RespondInteraction,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!err.is_retryable());

    // transition (runner side, by token).
    let resolved = i
        .transition(&TransitionRequest {
            session_id: "s-ops".into(),
            token: "tok-b".into(),
            status: InteractionStatus::Resolved,
            resolution: Some(
                Resolution {
                    verdict: Verdict::Approved,
                    tool_call_id: "toolu-tok-b".into(),
                }
                .to_object(),
            ),
        })
        .await
        .unwrap();
    assert_eq!(resolved.status, Some(InteractionStatus::Resolved));

    // cancel-stale: gates of other turns than the live one.
    i.create(&create_request("s-ops", "t-0", "tok-old"))
        .await
        .unwrap();
    let cancelled = i
        .cancel_stale(&CancelStaleRequest {
            session_id: "s-ops".into(),
            turn_id: "t-1".into(),
            tokens: None,
        })
        .await
        .unwrap();
    assert_eq!(cancelled, 1);

    // Not found, invalid id, wrong key.
    let err = i.get(&uuid::Uuid::new_v4().to_string()).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotFound {
                operation: Operation::GetInteraction,
                ..
            }
        ),
        "{err:?}"
    );
    let err = i.get("not-a-uuid").await.unwrap_err();
    assert!(
        matches!(err, Error::Validation { status: 422, .. }),
        "{err:?}"
    );
    let err = i
        .respond(&uuid::Uuid::new_v4().to_string(), &Answer::approve())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    let stranger = Client::builder(&server.base_url)
        .api_key("wrong-key")
        .project_id(&server.project_id)
        .build()
        .unwrap();
    let err = stranger
        .interactions()
        .list_pending(None)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Unauthorized {
                operation: Operation::QueryInteractions,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn watch_sees_a_real_gate_open_and_resolve() {
    let server = reference_server().await;
    let c = client_for(&server);
    let mut watch = c.interactions().watch("watch-session");
    next_matching(&mut watch, |u| matches!(u, WatchUpdate::Connected)).await;
    next_matching(&mut watch, |u| {
        matches!(u, WatchUpdate::Event(WatchEvent::Ready { .. }))
    })
    .await;

    let id = open_gate(&server, "watch-session", "m-watch").await;
    next_matching(&mut watch, |u| is_status(u, InteractionStatus::Pending)).await;

    // Revalidate as told: the gate is listed as pending, with the stamped config.
    let pending = c
        .interactions()
        .list_pending(Some("watch-session"))
        .await
        .unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].id.as_deref(), Some(id.as_str()));
    let stamped = pending[0]
        .stamped_parameters()
        .expect("the gate carries its config");
    assert_eq!(stamped["agent"]["llm"]["model"], "m-watch");

    c.interactions()
        .respond(&id, &Answer::approve())
        .await
        .unwrap();
    next_matching(&mut watch, |u| is_status(u, InteractionStatus::Responded)).await;
    next_matching(&mut watch, |u| is_status(u, InteractionStatus::Resolved)).await;
    let row = c.interactions().get(&id).await.unwrap();
    assert_eq!(row.status, Some(InteractionStatus::Resolved));
    drop(watch);
}

#[tokio::test]
async fn approve_all_with_fresh_already_answered_and_unknown_ids() {
    let server = reference_server().await;
    let c = client_for(&server);
    let mut ids = Vec::new();
    for n in 0..4 {
        ids.push(open_gate(&server, &format!("aa-{n}"), "m-aa").await);
    }
    // One answered elsewhere first.
    let other_device = client_for(&server);
    other_device
        .interactions()
        .respond(&ids[1], &Answer::deny("mine"))
        .await
        .unwrap();
    let unknown = uuid::Uuid::new_v4().to_string();
    let mut targets = ids.clone();
    targets.push(unknown.clone());

    let report = c
        .interactions()
        .approve_all(&targets, &Answer::approve())
        .await;
    let mut answered: Vec<_> = report
        .answered
        .iter()
        .map(|r| r.id.clone().unwrap())
        .collect();
    answered.sort();
    let mut expected = vec![ids[0].clone(), ids[2].clone(), ids[3].clone()];
    expected.sort();
    assert_eq!(answered, expected);
    assert_eq!(report.already_answered, [ids[1].clone()]);
    assert_eq!(report.failed.len(), 1);
    assert!(matches!(&report.failed[0], (id, Error::NotFound { .. }) if *id == unknown));
    assert!(!report.all_already_answered());

    // A second approve-all from another screen: everything is already settled.
    let again = other_device
        .interactions()
        .approve_all(&ids, &Answer::approve())
        .await;
    assert!(again.all_already_answered(), "{again:?}");
    assert_eq!(again.already_answered.len(), 4);
}

#[tokio::test]
async fn racing_responders_get_exactly_one_success() {
    let server = reference_server().await;
    let id = open_gate(&server, "race", "m-race").await;
    let mut tasks = Vec::new();
    for n in 0..8 {
        let c = client_for(&server);
        let id = id.clone();
        tasks.push(tokio::spawn(async move {
            c.interactions()
                .respond(&id, &Answer::approve().message(format!("device {n}")))
                .await
        }));
    }
    let mut wins = 0;
    let mut already = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => wins += 1,
            Err(Error::AlreadyAnswered { .. }) => already += 1,
            Err(other) => panic!("{other:?}"),
        }
    }
    assert_eq!((wins, already), (1, 7));
}

/// The respond reaches the server, the connection drops before the answer: the client
/// re-sends under the same Idempotency-Key and the server replays its 200.
#[tokio::test]
async fn respond_is_re_sent_with_the_same_key_after_a_dropped_answer() {
    let server = reference_server().await;
    let id = open_gate(&server, "idem", "m-idem").await;
    let responds = Arc::new(AtomicUsize::new(0));
    let seen = responds.clone();
    let proxy = proxy(&server.base_url, move |req| {
        if req.path().ends_with("/respond") && seen.fetch_add(1, Ordering::SeqCst) == 0 {
            ProxyAction::ForwardThenDrop
        } else {
            ProxyAction::Forward
        }
    })
    .await;
    let c = client_via(&server, &proxy.url);
    let row = c
        .interactions()
        .respond(&id, &Answer::deny("careful"))
        .await
        .unwrap();
    assert_eq!(row.id.as_deref(), Some(id.as_str()));
    assert!(matches!(
        row.status,
        Some(InteractionStatus::Responded) | Some(InteractionStatus::Resolved)
    ));
    let requests = proxy.requests();
    let posts: Vec<_> = requests.iter().filter(|r| r.method == "POST").collect();
    assert_eq!(posts.len(), 2, "one re-send");
    assert_eq!(
        posts[0].header("idempotency-key"),
        posts[1].header("idempotency-key")
    );
    // (The client asks the host's contract once, before its first respond.)
    assert!(
        requests
            .iter()
            .all(|r| r.method == "POST" || r.path() == "/api/capabilities"),
        "the replayed 200 needs no re-read"
    );
    // The landed answer is ours, once.
    let stored = client_for(&server).interactions().get(&id).await.unwrap();
    assert_eq!(
        stored.data.unwrap().resolution.unwrap()["answer"],
        serde_json::json!({"approved": false, "message": "careful"})
    );
}

/// A host that ignores Idempotency-Key answers the re-send with 409; the client reads
/// the row back, finds its own answer, and reports success, not AlreadyAnswered.
#[tokio::test]
async fn respond_re_send_that_gets_409_is_settled_by_reading_the_row() {
    // A host whose respond takes no key: the legacy contract (a durable one requires it).
    let server = reference_server_with(TestServerOptions {
        agenta_contract: gatehouse_server::AgentaContract::Legacy,
        ..TestServerOptions::default()
    })
    .await;
    let id = open_gate(&server, "idem-409", "m-idem").await;
    let seen = Arc::new(AtomicUsize::new(0));
    let proxy = proxy(&server.base_url, move |req| {
        if !req.path().ends_with("/respond") {
            return ProxyAction::Forward;
        }
        if seen.fetch_add(1, Ordering::SeqCst) == 0 {
            ProxyAction::ForwardThenDrop
        } else {
            ProxyAction::ForwardWithoutIdempotencyKey
        }
    })
    .await;
    let c = client_via(&server, &proxy.url);
    let row = c
        .interactions()
        .respond(&id, &Answer::approve())
        .await
        .unwrap();
    assert_eq!(row.id.as_deref(), Some(id.as_str()));
    let methods: Vec<_> = proxy
        .requests()
        .iter()
        .filter(|r| r.path() != "/api/capabilities")
        .map(|r| r.method.clone())
        .collect();
    assert_eq!(methods, ["POST", "POST", "GET"]);

    // The same situation when someone else's answer landed: AlreadyAnswered.
    let id2 = open_gate(&server, "idem-409-b", "m-idem").await;
    client_for(&server)
        .interactions()
        .respond(&id2, &Answer::deny("other device"))
        .await
        .unwrap();
    let dropper = Arc::new(AtomicUsize::new(0));
    let d = dropper.clone();
    let proxy2 = crate::common::proxy(&server.base_url, move |req| {
        if req.path().ends_with("/respond") && d.fetch_add(1, Ordering::SeqCst) == 0 {
            // Drop without the request landing being ours: the gate was already answered.
            ProxyAction::ForwardThenDrop
        } else {
            ProxyAction::ForwardWithoutIdempotencyKey
        }
    })
    .await;
    let err = client_via(&server, &proxy2.url)
        .interactions()
        .respond(&id2, &Answer::approve())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::AlreadyAnswered { .. }), "{err:?}");
}

#[tokio::test]
async fn runs_against_the_reference_runner() {
    let server = reference_server().await;
    let c = Client::builder(&server.base_url)
        .runner_token(&server.api_key)
        .build()
        .unwrap();
    let params = serde_json::json!({"agent": {"llm": {"model": "m-run"}}});
    let (mut request, _) = gatehouse_wire::run::RunRequest::new(
        gatehouse_wire::run::Harness::Claude,
        gatehouse_wire::run::Sandbox::Local,
        "m-run",
        vec![gatehouse_wire::run::ChatMessage::text("user", "hello")],
    )
    .for_session("run-session", params, &Default::default());
    request.permissions.as_mut().unwrap().default = gatehouse_wire::run::PermissionMode::Allow;
    let records: Vec<_> = c.runs().stream(&request).collect().await;
    let records: Vec<_> = records.into_iter().map(|r| r.unwrap()).collect();
    assert!(records.len() >= 2, "{records:?}");
    match records.last().unwrap() {
        gatehouse_wire::run::RunStreamRecord::Result { result } => {
            assert!(result.ok, "{result:?}");
            assert!(
                result
                    .output
                    .as_deref()
                    .unwrap_or("")
                    .contains("[model=m-run]"),
                "{result:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    let result = c.runs().run(&request).await.unwrap();
    assert!(result.ok);
    let anonymous = Client::builder(&server.base_url).build().unwrap();
    let err = anonymous.runs().run(&request).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Unauthorized {
                operation: Operation::Run,
                ..
            }
        ),
        "{err:?}"
    );
}

/// The resumed turns of `session` on `server`, read over HTTP.
async fn resumed_turns(server: &gatehouse_server::testing::TestServer, session: &str) -> usize {
    let body: serde_json::Value = reqwest::Client::new()
        .get(server.url(&format!("/api/sessions/{session}/turns")))
        .header("Authorization", server.authorization())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["resumed"] == true)
        .count()
}

/// Parallel gates against a durable Gatehouse server (CONTRACT.md A7): approve-all by
/// turn sends one `answers[]` request per turn and reports every gate. A turn answered
/// whole continues once (both gates: the same command); a turn answered in part waits
/// for its other gate (`AwaitingOtherGates`), and continues once when it comes.
#[tokio::test]
async fn approve_gates_reports_each_parallel_gate_against_a_durable_server() {
    use gatehouse_client::RespondOutcome;
    let server = reference_server_with(TestServerOptions {
        agenta_contract: gatehouse_server::AgentaContract::Durable,
        ..Default::default()
    })
    .await;
    let c = client_for(&server);
    let parallel = serde_json::json!({"agent": {
        "llm": {"model": "m-par"},
        "runner": {"permissions": {"default": "ask"}},
        "script": [
            {"parallel": [{"tool": "Bash", "args": {"command": "a"}}, {"tool": "Edit", "args": {"file": "b"}}]},
            {"say": "done"}
        ]
    }});
    open_gate_with(&server, "par-whole", parallel.clone()).await;
    open_gate_with(&server, "par-part", parallel).await;
    let whole = c
        .interactions()
        .list_pending(Some("par-whole"))
        .await
        .unwrap();
    let part = c
        .interactions()
        .list_pending(Some("par-part"))
        .await
        .unwrap();
    assert_eq!((whole.len(), part.len()), (2, 2));
    let gates = vec![whole[0].clone(), part[0].clone(), whole[1].clone()];
    let report = c
        .interactions()
        .approve_gates(&gates, &Answer::approve())
        .await;
    assert_eq!(report.gates.len(), 3);
    assert_eq!(report.failed().count(), 0, "{report:?}");
    let mut commands = Vec::new();
    for gate in &report.gates {
        let waiting = gate.id == part[0].id.clone().unwrap();
        match gate.result.as_ref().unwrap() {
            RespondOutcome::Continued { command, .. } if !waiting => {
                commands.push(command.id.clone())
            }
            RespondOutcome::AwaitingOtherGates { execution, .. } if waiting => {
                assert_eq!(Some(&execution.id), part[0].turn_id.as_ref());
            }
            other => panic!("{}: {other:?}", gate.id),
        }
    }
    assert_eq!(commands.len(), 2);
    assert_eq!(
        commands[0], commands[1],
        "one continuation for the whole turn"
    );
    let resumed =
        wait_until_true(|| async { resumed_turns(&server, "par-whole").await == 1 }).await;
    assert!(resumed, "the whole turn resumed once");
    assert_eq!(resumed_turns(&server, "par-part").await, 0);
    // The part turn's last gate: it continues now, once.
    let report = c
        .interactions()
        .approve_gates(std::slice::from_ref(&part[1]), &Answer::approve())
        .await;
    assert!(
        matches!(report.gates[0].result, Ok(RespondOutcome::Continued { .. })),
        "{report:?}"
    );
    let resumed = wait_until_true(|| async { resumed_turns(&server, "par-part").await == 1 }).await;
    assert!(resumed, "the part turn resumed once");
    assert_eq!(resumed_turns(&server, "par-whole").await, 1);
}

/// Poll `check` for up to ten seconds.
async fn wait_until_true<F, Fut>(mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}
