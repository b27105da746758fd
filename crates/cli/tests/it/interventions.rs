//! `gatehouse interventions ...` against a real server: requested is not applied, the
//! wait reports applied only with evidence, and the exit codes (3 conflict, 4 not found,
//! 5 capability unavailable, 1 rejected).

use std::process::Stdio;

use futures::StreamExt;

use crate::common::{client, gatehouse, invoke_parked, run, text};
use gatehouse_server::testing::{spawn, TestServer, TestServerOptions};
use gatehouse_wire::execution::ExecutionRef;
use serde_json::{json, Value};

/// A turn parked at an approval gate: (gate id, its execution session).
async fn park(server: &TestServer) -> (String, ExecutionRef) {
    let agent = json!({
        "llm": {"model": "m-a"},
        "runner": {"permissions": {"default": "ask"}},
        "script": [{"say": "first"}, {"tool": "Bash", "args": {"command": "ls"}}, {"say": "last"}]
    });
    let session = uuid::Uuid::new_v4().to_string();
    let answer = invoke_parked(server, &session, agent, Vec::new()).await;
    (answer.interaction_ids[0].clone(), answer.execution.unwrap())
}

fn target(exec: &ExecutionRef) -> Vec<String> {
    vec![
        "--room".to_string(),
        exec.room_id.clone(),
        "--session".to_string(),
        exec.session_id.clone(),
    ]
}

fn args<'a>(head: &[&'a str], target: &'a [String], tail: &[&'a str]) -> Vec<&'a str> {
    head.iter()
        .copied()
        .chain(target.iter().map(String::as_str))
        .chain(tail.iter().copied())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn request_get_wait_events() {
    let server = spawn(TestServerOptions::default()).await;
    let (gate, exec) = park(&server).await;
    let t = target(&exec);

    let get = run(&server, &args(&["interventions", "get"], &t, &[]));
    assert_eq!(get.status.code(), Some(0), "{}", text(&get.stderr));
    let shown = text(&get.stdout);
    assert!(
        shown.contains("paused") && shown.contains("no interventions"),
        "{shown}"
    );
    let revision: u64 = {
        let json = run(&server, &args(&["interventions", "get", "--json"], &t, &[]));
        let session: Value = serde_json::from_slice(&json.stdout).unwrap();
        session["revision"].as_u64().unwrap()
    };

    let request = run(
        &server,
        &args(
            &["interventions", "request"],
            &t,
            &[
                "--instruction",
                "Mention ticket T-7.",
                "--operation-id",
                "op-cli-1",
                "--json",
            ],
        ),
    );
    assert_eq!(request.status.code(), Some(0), "{}", text(&request.stderr));
    let requested: Value = serde_json::from_slice(&request.stdout).unwrap();
    assert_eq!(requested["operation_id"], "op-cli-1");
    assert_eq!(requested["state"], "requested");
    assert_eq!(requested["intervention"]["status"], "pending");

    // The same operation id with the same payload replays; with another payload it conflicts.
    let replay = run(
        &server,
        &args(
            &["interventions", "request"],
            &t,
            &[
                "--instruction",
                "Mention ticket T-7.",
                "--operation-id",
                "op-cli-1",
            ],
        ),
    );
    assert_eq!(replay.status.code(), Some(0), "{}", text(&replay.stderr));
    assert!(text(&replay.stdout).contains("requested (pending: not applied yet"));
    let bound = run(
        &server,
        &args(
            &["interventions", "request"],
            &t,
            &[
                "--instruction",
                "something else",
                "--operation-id",
                "op-cli-1",
            ],
        ),
    );
    assert_eq!(bound.status.code(), Some(3), "{}", text(&bound.stderr));
    assert!(text(&bound.stderr).contains("operation id is bound"));

    // A stale expected revision: exit 3, nothing added.
    let stale = revision.to_string();
    let conflict = run(
        &server,
        &args(
            &["interventions", "request"],
            &t,
            &["--instruction", "stop", "--expected-revision", &stale],
        ),
    );
    assert_eq!(
        conflict.status.code(),
        Some(3),
        "{}",
        text(&conflict.stderr)
    );
    assert!(text(&conflict.stderr).contains("revision conflict"));

    // Wait in another process while the gate is answered: applied, with evidence.
    let waiter = gatehouse(&server)
        .args(args(
            &["interventions", "wait"],
            &t,
            &["--operation-id", "op-cli-1", "--wait-timeout", "20"],
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    client(&server)
        .interactions()
        .respond(&gate, &gatehouse_client::Answer::approve())
        .await
        .unwrap();
    let waited = tokio::task::spawn_blocking(move || waiter.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(waited.status.code(), Some(0), "{}", text(&waited.stderr));
    let line = text(&waited.stdout);
    assert!(
        line.contains("operation op-cli-1: applied (evidence: event #")
            && line.contains("intervention_applied"),
        "{line}"
    );

    let wait_json = run(
        &server,
        &args(
            &["interventions", "wait", "--json"],
            &t,
            &["--operation-id", "op-cli-1"],
        ),
    );
    let outcome: Value = serde_json::from_slice(&wait_json.stdout).unwrap();
    assert_eq!(outcome["outcome"], "applied");
    assert_eq!(outcome["evidence"]["type"], "intervention_applied");

    let events = run(&server, &args(&["interventions", "events"], &t, &[]));
    assert_eq!(events.status.code(), Some(0));
    let table = text(&events.stdout);
    assert!(table.starts_with("SEQ"), "{table}");
    for kind in [
        "session_opened",
        "intervention_requested",
        "intervention_applied",
    ] {
        assert!(table.contains(kind), "{kind} missing in:\n{table}");
    }
    let all: Vec<Value> = serde_json::from_slice(
        &run(
            &server,
            &args(&["interventions", "events", "--json"], &t, &[]),
        )
        .stdout,
    )
    .unwrap();
    let first = all[0]["sequence"].as_u64().unwrap();
    let after: Vec<Value> = serde_json::from_slice(
        &run(
            &server,
            &args(
                &["interventions", "events", "--json"],
                &t,
                &["--after", &first.to_string()],
            ),
        )
        .stdout,
    )
    .unwrap();
    assert_eq!(after.len(), all.len() - 1);

    // The run is over: --follow replays the log and ends after session_reconciled.
    let follow = run(
        &server,
        &args(&["interventions", "events", "--follow", "--json"], &t, &[]),
    );
    assert_eq!(follow.status.code(), Some(0), "{}", text(&follow.stderr));
    let lines: Vec<Value> = text(&follow.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.last().unwrap()["type"], "session_reconciled");

    let get_after = text(&run(&server, &args(&["interventions", "get"], &t, &[])).stdout);
    assert!(
        get_after.contains("op-cli-1") && get_after.contains("applied"),
        "{get_after}"
    );

    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_intervention_the_run_never_reaches_is_reported_rejected() {
    let server = spawn(TestServerOptions::default()).await;
    let (gate, exec) = park(&server).await;
    let t = target(&exec);
    // On resume the run meets pre_action first (before the gated tool): a `stop` there
    // halts the run, so the pre_step intervention is never reached and ends rejected.
    for (op, instruction, checkpoint) in [
        ("op-stop", "stop", "pre-action"),
        ("op-never", "say hello", "pre-step"),
    ] {
        let request = run(
            &server,
            &args(
                &["interventions", "request"],
                &t,
                &[
                    "--instruction",
                    instruction,
                    "--checkpoint",
                    checkpoint,
                    "--operation-id",
                    op,
                ],
            ),
        );
        assert_eq!(request.status.code(), Some(0), "{}", text(&request.stderr));
    }
    client(&server)
        .interactions()
        .respond(&gate, &gatehouse_client::Answer::approve())
        .await
        .unwrap();
    let stopped = run(
        &server,
        &args(
            &["interventions", "wait"],
            &t,
            &["--operation-id", "op-stop", "--wait-timeout", "20"],
        ),
    );
    assert_eq!(stopped.status.code(), Some(0), "{}", text(&stopped.stderr));
    assert!(text(&stopped.stdout).contains("op-stop: applied"));

    let waited = run(
        &server,
        &args(
            &["interventions", "wait"],
            &t,
            &["--operation-id", "op-never", "--wait-timeout", "20"],
        ),
    );
    assert_eq!(waited.status.code(), Some(1), "{}", text(&waited.stdout));
    let err = text(&waited.stderr);
    assert!(
        err.contains("op-never was rejected") || err.contains("op-never was not applied"),
        "{err}"
    );
    assert!(!text(&waited.stdout).contains("applied"));

    let json = run(
        &server,
        &args(
            &["interventions", "wait", "--json"],
            &t,
            &["--operation-id", "op-never"],
        ),
    );
    assert_eq!(json.status.code(), Some(1));
    let outcome: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_ne!(outcome["outcome"], "applied");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn request_with_wait_reports_applied() {
    let server = spawn(TestServerOptions::default()).await;
    let (gate, exec) = park(&server).await;
    let t = target(&exec);
    let requester = gatehouse(&server)
        .args(args(
            &["interventions", "request"],
            &t,
            &[
                "--instruction",
                "be brief",
                "--wait",
                "--wait-timeout",
                "20",
            ],
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Answer the gate once the request shows in the session's event stream.
    let c = client(&server);
    let mut events = c
        .execution()
        .watch_events(&exec.room_id, &exec.session_id, None);
    tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while let Some(event) = events.next().await {
            if event.unwrap().event_type
                == gatehouse_wire::execution::ExecutionEventType::InterventionRequested
            {
                return;
            }
        }
        panic!("the event stream ended before the request showed");
    })
    .await
    .expect("the request showed within 10 s");
    drop(events);
    c.interactions()
        .respond(&gate, &gatehouse_client::Answer::approve())
        .await
        .unwrap();
    let out = tokio::task::spawn_blocking(move || requester.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    let mut lines = shown.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .contains("requested (pending: not applied yet"),
        "{shown}"
    );
    assert!(shown.contains(": applied (evidence: event #"), "{shown}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn not_found_unavailable_and_usage() {
    let server = spawn(TestServerOptions::default()).await;
    let missing = run(
        &server,
        &[
            "interventions",
            "get",
            "--room",
            "room-x",
            "--session",
            "es-x",
        ],
    );
    assert_eq!(missing.status.code(), Some(4), "{}", text(&missing.stderr));
    assert!(text(&missing.stderr).contains("not found"));

    let (_, exec) = park(&server).await;
    let t = target(&exec);
    let no_op = run(
        &server,
        &args(&["interventions", "wait"], &t, &["--operation-id", "nope"]),
    );
    assert_eq!(no_op.status.code(), Some(4), "{}", text(&no_op.stderr));

    let no_room = run(&server, &["interventions", "get", "--session", "es-x"]);
    assert_eq!(no_room.status.code(), Some(2));
    // A checkpoint this CLI does not know is sent as given: the host refuses it (exit 8).
    let bad_checkpoint = run(
        &server,
        &args(
            &["interventions", "request"],
            &t,
            &["--instruction", "x", "--checkpoint", "later"],
        ),
    );
    assert_eq!(
        bad_checkpoint.status.code(),
        Some(8),
        "{}",
        text(&bad_checkpoint.stderr)
    );
    assert!(text(&bad_checkpoint.stderr).contains("Run intervention checkpoint is invalid"));
    let blank_checkpoint = run(
        &server,
        &args(
            &["interventions", "request"],
            &t,
            &["--instruction", "x", "--checkpoint", " "],
        ),
    );
    assert_eq!(blank_checkpoint.status.code(), Some(2));
    server.shutdown().await;

    let bare = spawn(TestServerOptions {
        execution: false,
        ..TestServerOptions::default()
    })
    .await;
    for argv in [
        vec!["interventions", "get", "--room", "r", "--session", "s"],
        vec![
            "interventions",
            "request",
            "--room",
            "r",
            "--session",
            "s",
            "--instruction",
            "stop",
        ],
        vec!["interventions", "events", "--room", "r", "--session", "s"],
    ] {
        let out = run(&bare, &argv);
        assert_eq!(
            out.status.code(),
            Some(5),
            "{argv:?}: {}",
            text(&out.stderr)
        );
        assert!(text(&out.stderr).contains("capability execution is not served"));
    }
    bare.shutdown().await;
}

/// An instruction is free text and may carry control characters: `interventions get`
/// (and `request`) show them escaped, never raw, so an instruction cannot rewrite the
/// lines around it.
#[tokio::test(flavor = "multi_thread")]
async fn control_characters_in_an_instruction_are_shown_escaped() {
    let server = spawn(TestServerOptions::default()).await;
    let (_, exec) = park(&server).await;
    let t = target(&exec);
    let instruction = "be brief\u{1b}[2K\rok\u{7}";
    let request = run(
        &server,
        &args(
            &["interventions", "request"],
            &t,
            &["--instruction", instruction, "--operation-id", "op-esc-1"],
        ),
    );
    assert_eq!(request.status.code(), Some(0), "{}", text(&request.stderr));
    let get = run(&server, &args(&["interventions", "get"], &t, &[]));
    assert_eq!(get.status.code(), Some(0), "{}", text(&get.stderr));
    for out in [&request.stdout, &request.stderr, &get.stdout] {
        let shown = text(out);
        assert!(
            !shown.chars().any(|c| c.is_control() && c != '\n'),
            "{shown:?}"
        );
    }
    let shown = text(&get.stdout);
    assert!(shown.contains("be brief\\u{1b}[2K\\rok\\u{7}"), "{shown}");
    server.shutdown().await;
}
