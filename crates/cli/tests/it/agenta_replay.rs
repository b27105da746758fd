//! Upstream conformance: the Rust client and the `gatehouse` command against Agenta's API
//! as recorded live (`gatehouse_fixtures`, `agenta/live/recorded/`), replayed by a
//! loopback fake host (`replay/agenta.rs`) that checks every request as sent. Each CLI
//! step is run as recorded (its arguments, its environment changes) against the
//! exchanges it made, and must end as Agenta's behaviour requires, which is where it
//! departs from what the recorded CLI (main f77ffce) printed:
//! - a respond whose 502 hid an answer Agenta took: "answered; whose answer is not
//!   knowable from this host" (exit 11), not "already answered" (3) nor the 502 (1);
//! - `--project` of another project, which Agenta ignores under an API key: refused
//!   naming both projects (exit 12), the key's project's rows never printed;
//! - a respond to a row without a stamp never says its turn resumes under one;
//! - `watch --max-events N` counts the session's events, not the `ready` frame;
//! - Agenta's watch frames (no interaction id, a respond shown as `resolved`) are read
//!   without a failure and every event surfaces.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::common::{gatehouse_without_env, text};
use crate::replay::agenta::{load, CliStep, FakeHost, Recording};
use futures::StreamExt;
use gatehouse_client::{Answer, Client, ErrorKind, RetryPolicy, Upstream, WatchUpdate};
use gatehouse_wire::interaction::{InteractionQuery, InteractionStatus, WatchEvent};
use serde_json::Value;

const SUITE: &str = "Agenta live recordings (client and CLI replay)";

/// An API key as long as the one the CLI sent most often (the recording keeps a key's
/// length only).
fn api_key(recording: &Recording) -> String {
    let mut lengths: Vec<usize> = recording
        .exchanges
        .iter()
        .filter(|x| x.sent_by == "gatehouse CLI")
        .filter_map(|x| x.authorization().filter(|(scheme, _)| scheme == "ApiKey"))
        .map(|(_, length)| length)
        .collect();
    lengths.sort_unstable();
    let most_sent = lengths
        .iter()
        .max_by_key(|l| lengths.iter().filter(|m| m == l).count())
        .expect("a recorded ApiKey");
    "k".repeat(*most_sent)
}

/// The key `step` sent: as long as its first request's (a step recorded without its
/// environment changes, such as a wrong key, shows it only there).
fn step_key(recording: &Recording, step: &CliStep) -> String {
    recording
        .step_exchanges(&step.step)
        .first()
        .and_then(|x| x.authorization())
        .map(|(_, length)| "k".repeat(length))
        .unwrap_or_else(|| api_key(recording))
}

/// `gatehouse` as the recording ran it against `host`: `--upstream agenta`, the
/// recorded key length and project, then the step's own environment changes.
fn command(host: &FakeHost, recording: &Recording, step: &CliStep) -> Command {
    let mut cmd = gatehouse_without_env();
    cmd.env("GATEHOUSE_URL", &host.url)
        .env("GATEHOUSE_UPSTREAM", "agenta")
        .env("GATEHOUSE_API_KEY", step_key(recording, step))
        .env("GATEHOUSE_PROJECT", recording.default_project());
    for (name, value) in &step.env {
        match value {
            Some(value) => cmd.env(name, value),
            None => cmd.env_remove(name),
        };
    }
    cmd.args(&step.args);
    cmd
}

/// Run `step` against a fake host serving the exchanges it made; every one must be
/// asked for, as recorded.
async fn run_step(recording: &Recording, step: &CliStep) -> (Output, FakeHost) {
    let host = FakeHost::start(recording.step_exchanges(&step.step)).await;
    let mut cmd = command(&host, recording, step);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert_eq!(host.mismatches(), Vec::<String>::new(), "{}", step.step);
    assert_eq!(host.remaining(), Vec::<String>::new(), "{}", step.step);
    (out, host)
}

fn at(step: &CliStep, out: &Output) -> String {
    format!(
        "{}: exit {:?}, stdout {}, stderr {}",
        step.step,
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    )
}

/// A client as the recorded CLI was configured (Agenta, the key, `project`).
fn client(url: &str, recording: &Recording, project: Option<&str>) -> Client {
    let mut builder = Client::builder(url)
        .upstream(Upstream::Agenta)
        .api_key(api_key(recording))
        .retry_policy(RetryPolicy {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(20),
        });
    if let Some(project) = project {
        builder = builder.project_id(project);
    }
    builder.build().unwrap()
}

// ---------------------------------------------------------------------------------------
// Item 1: an answer whose owner the host cannot show
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn a_respond_whose_502_hid_a_taken_answer_is_answered_owner_unknown() {
    let Some(recording) = load(SUITE, "cli_respond_fault_502") else {
        return;
    };
    let responds: Vec<&CliStep> = recording
        .cli
        .iter()
        .filter(|s| s.args.first().map(String::as_str) == Some("interactions"))
        .filter(|s| s.args.get(1).map(String::as_str) == Some("respond"))
        .collect();
    assert_eq!(
        responds.len(),
        2,
        "the 502-then-409 and the 502-every-time steps"
    );
    for step in responds {
        let (out, host) = run_step(&recording, step).await;
        let at = at(step, &out);
        assert_eq!(out.status.code(), Some(11), "{at}");
        assert!(text(&out.stdout).is_empty(), "{at}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.starts_with("error: ")
                && stderr.contains("answered; whose answer is not knowable from this host"),
            "{at}"
        );
        assert!(!stderr.contains("already answered"), "{at}");
        // Every re-send carried the first try's key; then the row was read back.
        let seen = host.seen();
        let keys: Vec<_> = seen
            .iter()
            .filter(|r| r.method == "POST")
            .map(|r| r.headers.get("idempotency-key").cloned())
            .collect();
        assert!(
            keys.len() >= 2 && keys.iter().all(|k| k == &keys[0]),
            "{at}"
        );
        assert_eq!(seen.last().map(|r| r.method.as_str()), Some("GET"), "{at}");

        // The client says the same, typed.
        let host = FakeHost::start(recording.step_exchanges(&step.step)).await;
        let id = &step.args[2];
        let answer = if step.args.iter().any(|a| a == "--approve") {
            Answer::approve()
        } else {
            Answer::deny("")
        };
        let err = client(&host.url, &recording, Some(&recording.default_project()))
            .interactions()
            .respond(id, &answer)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AnswerOwnerUnknown, "{err:?}");
        assert_eq!(host.mismatches(), Vec::<String>::new());
    }
    // Reading the row afterwards still works and shows it answered.
    let get = recording.step("cli get f1 after the faulted respond --json");
    let (out, _) = run_step(&recording, get).await;
    assert_eq!(out.status.code(), Some(0), "{}", at(get, &out));
    let row: Value = serde_json::from_slice(&out.stdout).unwrap();
    let recorded: Value = serde_json::from_str(&get.stdout).unwrap();
    assert_eq!(numbers_as_f64(row), numbers_as_f64(recorded));
}

/// `value` with every number as its f64: the recording keeps Agenta's bodies as
/// Python's `json.dumps` re-wrote them (`1e-05`), the recorded CLI printed what Agenta
/// sent (`0.00001`).
fn numbers_as_f64(value: Value) -> Value {
    match value {
        Value::Number(n) => n
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Number(n), Value::Number),
        Value::Array(items) => Value::Array(items.into_iter().map(numbers_as_f64).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, numbers_as_f64(v)))
                .collect(),
        ),
        other => other,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn approve_all_tells_a_lost_outcome_from_someone_elses_answer() {
    let (Some(fault), Some(approve_all)) = (
        load(SUITE, "cli_respond_fault_502"),
        load(SUITE, "cli_approve_all"),
    ) else {
        return;
    };
    // f1: Agenta took the approval, the client got 502, the re-send 409, the row no
    // answer. r3: a first try met 409, answered by someone else before.
    let lost = fault.step("cli respond f1 --approve; proxy answers 502 after Agenta took it");
    let taken = "cli approve-all <ids already answered> r3";
    let other = approve_all
        .step_exchanges(taken)
        .into_iter()
        .find(|x| x.status == 409)
        .unwrap();
    let other_id = other.path.split('/').nth(4).unwrap().to_string();
    let mut exchanges = fault.step_exchanges(&lost.step);
    exchanges.push(other);
    let host = FakeHost::start(exchanges).await;
    let step = CliStep {
        step: "approve-all".into(),
        args: [
            "interactions",
            "approve-all",
            lost.args[2].as_str(),
            other_id.as_str(),
        ]
        .map(String::from)
        .to_vec(),
        env: Default::default(),
        exit: 11,
        stdout: String::new(),
        stderr: String::new(),
    };
    let mut cmd = command(&host, &fault, &step);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let at = at(&step, &out);
    assert_eq!(host.mismatches(), Vec::<String>::new(), "{at}");
    assert_eq!(host.remaining(), Vec::<String>::new(), "{at}");
    assert_eq!(out.status.code(), Some(11), "{at}");
    let stdout = text(&out.stdout);
    let outcome = |id: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        outcome(&lost.args[2]).ends_with("answered; whose answer is not knowable from this host"),
        "{at}"
    );
    assert!(
        outcome(&other_id).ends_with("already answered (settled elsewhere)"),
        "{at}"
    );
    assert!(
        stdout.contains(
            "0 approved, 1 already answered, 1 answered (whose answer is not knowable), 0 failed"
        ),
        "{at}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_first_answer_and_a_second_device_answer_keep_their_recorded_exits() {
    let Some(recording) = load(SUITE, "cli_respond") else {
        return;
    };
    for step in &recording.cli {
        let (out, _) = run_step(&recording, step).await;
        let at = at(step, &out);
        // A first try met 409: nothing of ours can have landed, so someone else's.
        assert_eq!(out.status.code(), Some(step.exit), "{at}");
        if step.exit != 0 {
            assert_eq!(text(&out.stderr), step.stderr, "{at}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Item 2: another project's rows
// ---------------------------------------------------------------------------------------

/// The projects of the rows an exchange answered.
fn row_projects(response: &Value) -> Vec<String> {
    let rows: Vec<&Value> = match (response.get("interactions"), response.get("interaction")) {
        (Some(Value::Array(rows)), _) => rows.iter().collect(),
        (_, Some(row)) if row.is_object() => vec![row],
        _ => Vec::new(),
    };
    rows.iter()
        .filter_map(|r| r["project_id"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn another_projects_rows_are_refused_naming_both_never_printed() {
    let Some(recording) = load(SUITE, "cli_auth_project") else {
        return;
    };
    let mut refused = 0;
    for step in &recording.cli {
        let (out, _) = run_step(&recording, step).await;
        let at = at(step, &out);
        let exchange = &recording.step_exchanges(&step.step)[0];
        let asked = exchange.project().map(str::to_string);
        let foreign = row_projects(&exchange.response)
            .into_iter()
            .find(|p| asked.as_ref().is_some_and(|asked| asked != p));
        match (asked, foreign) {
            (Some(asked), Some(answered)) => {
                refused += 1;
                assert_eq!(out.status.code(), Some(12), "{at}");
                assert!(text(&out.stdout).is_empty(), "{at}");
                let stderr = text(&out.stderr);
                assert!(stderr.starts_with("error: "), "{at}");
                assert!(
                    stderr.contains(&asked) && stderr.contains(&answered),
                    "{at}"
                );
                // The client refuses the same rows, typed.
                let host = FakeHost::start(recording.step_exchanges(&step.step)).await;
                let c = client(&host.url, &recording, Some(&asked));
                let err = if step.args[1] == "get" {
                    c.interactions().get(&step.args[2]).await.unwrap_err()
                } else {
                    let query = InteractionQuery {
                        session_id: Some(step.args[3].clone()),
                        ..InteractionQuery::default()
                    };
                    c.interactions().query_all(&query).await.unwrap_err()
                };
                assert_eq!(err.kind(), ErrorKind::ProjectMismatch, "{err:?}");
                assert_eq!(host.mismatches(), Vec::<String>::new());
            }
            _ => {
                // Wrong key, no key, no --project, the zero UUID: as recorded.
                assert_eq!(out.status.code(), Some(step.exit), "{at}");
                if step.exit == 0 {
                    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
                    let recorded: Value = serde_json::from_str(&step.stdout).unwrap();
                    assert_eq!(numbers_as_f64(printed), numbers_as_f64(recorded), "{at}");
                } else {
                    assert_eq!(text(&out.stderr), step.stderr, "{at}");
                }
            }
        }
    }
    assert_eq!(refused, 2, "the list and the get of another project");
}

// ---------------------------------------------------------------------------------------
// Item 3: the stamped config
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn a_respond_names_the_stamped_config_only_when_the_row_carries_one() {
    let Some(recording) = load(SUITE, "cli_respond") else {
        return;
    };
    let mut checked = (0, 0);
    for step in &recording.cli {
        if step.exit != 0 || step.args.iter().any(|a| a == "--json") || step.args[1] != "respond" {
            continue;
        }
        let (out, _) = run_step(&recording, step).await;
        let at = at(step, &out);
        let row = &recording.step_exchanges(&step.step)[0].response["interaction"];
        let stamped = row["data"]["parameters"]
            .as_object()
            .is_some_and(|p| !p.is_empty());
        let verdict = if step.args.iter().any(|a| a == "--approve") {
            "approved"
        } else {
            "denied"
        };
        let head = format!(
            "{verdict} {} (status {})",
            step.args[2],
            row["status"].as_str().unwrap()
        );
        let stdout = text(&out.stdout);
        if stamped {
            checked.0 += 1;
            assert_eq!(
                stdout,
                format!("{head}; the turn resumes under its stamped config\n"),
                "{at}"
            );
        } else {
            checked.1 += 1;
            assert_eq!(
                stdout,
                format!("{head}; the row carries no stamped config\n"),
                "{at}"
            );
        }
    }
    assert_eq!(checked, (1, 1), "a stamped row and a row without a stamp");
}

// ---------------------------------------------------------------------------------------
// Items 4 and 5: the watch
// ---------------------------------------------------------------------------------------

/// The `interaction` statuses of a recorded stream, in order.
fn recorded_statuses(stream: &str) -> Vec<String> {
    crate::replay::frames(stream)
        .into_iter()
        .filter(|f| f.event.as_deref() == Some("interaction"))
        .map(|f| f.data["status"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn agentas_recorded_watch_frames_surface_every_event_without_a_failure() {
    let Some(recording) = load(SUITE, "watch_sse") else {
        return;
    };
    let stream = recording
        .exchanges
        .iter()
        .find(|x| x.stream)
        .expect("a recorded stream")
        .clone();
    let session = stream.query["session_id"].clone();
    let statuses = recorded_statuses(stream.response.as_str().unwrap());
    assert_eq!(statuses.len(), 6);

    let host = FakeHost::start(vec![stream]).await;
    let c = client(&host.url, &recording, Some(&recording.default_project()));
    let mut watch = c.interactions().watch(&session);
    let mut updates = Vec::new();
    while updates.len() < 2 + statuses.len() {
        let update = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("an update in time")
            .expect("the watch goes on")
            .expect("no failed read");
        updates.push(update);
    }
    drop(watch);
    assert!(matches!(updates[0], WatchUpdate::Connected), "{updates:?}");
    assert!(
        matches!(updates[1], WatchUpdate::Event(WatchEvent::Ready { .. })),
        "{updates:?}"
    );
    let read: Vec<String> = updates[2..]
        .iter()
        .map(|u| match u {
            WatchUpdate::Event(WatchEvent::Interaction {
                session_id: s,
                status,
                interaction_id: None,
            }) if *s == session => status.as_str().to_string(),
            other => panic!("expected an interaction event without an id, got {other:?}"),
        })
        .collect();
    assert_eq!(read, statuses);
    assert!(read
        .iter()
        .all(|s| s != InteractionStatus::Responded.as_str()));
    assert_eq!(host.mismatches(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_max_events_counts_the_sessions_events_not_ready() {
    let Some(recording) = load(SUITE, "watch_sse") else {
        return;
    };
    let streams: Vec<_> = recording
        .exchanges
        .iter()
        .filter(|x| x.stream)
        .cloned()
        .collect();
    let session = streams[0].query["session_id"].clone();
    let statuses = recorded_statuses(streams[0].response.as_str().unwrap());
    let watchers = &recording.doc["cli_watchers"];
    let step = |args: &[&str]| CliStep {
        step: "watch".into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        env: Default::default(),
        exit: 0,
        stdout: String::new(),
        stderr: String::new(),
    };
    let max = statuses.len().to_string();

    // --json: the ready line, then exactly N events, and it stops by itself.
    let host = FakeHost::start(vec![streams[0].clone()]).await;
    let json = step(&[
        "interactions",
        "watch",
        &session,
        "--json",
        "--max-events",
        &max,
    ]);
    let mut cmd = command(&host, &recording, &json);
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        tokio::task::spawn_blocking(move || cmd.output().unwrap()),
    )
    .await
    .expect("--max-events ends the watch")
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", at(&json, &out));
    // What the recorded watcher printed before it was interrupted: the same lines.
    assert_eq!(
        text(&out.stdout),
        watchers["json"]["stdout"].as_str().unwrap()
    );

    // The human form re-lists the pending gates on connect, then the same events.
    let list = recording.exchanges[0].clone();
    assert_eq!(list.path, "/api/sessions/interactions/query");
    let host = FakeHost::start(vec![list, streams[1].clone()]).await;
    let human = step(&["interactions", "watch", &session, "--max-events", &max]);
    let mut cmd = command(&host, &recording, &human);
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        tokio::task::spawn_blocking(move || cmd.output().unwrap()),
    )
    .await
    .expect("--max-events ends the watch")
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", at(&human, &out));
    assert_eq!(
        text(&out.stdout),
        watchers["human"]["stdout"].as_str().unwrap()
    );
    assert_eq!(host.mismatches(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_max_events_1_waits_past_the_ready_frame() {
    let Some(recording) = load(SUITE, "watch_errors") else {
        return;
    };
    for step in &recording.cli {
        let exchanges = recording.step_exchanges(&step.step);
        if !exchanges[0].stream {
            // A wrong key (1), a session id Agenta refuses (8): as recorded.
            let (out, _) = run_step(&recording, step).await;
            assert_eq!(out.status.code(), Some(step.exit), "{}", at(step, &out));
            assert_eq!(text(&out.stderr), step.stderr, "{}", at(step, &out));
            continue;
        }
        // Only `ready` arrives: --max-events 1 is not reached, the watch goes on.
        assert!(step.args.windows(2).any(|w| w == ["--max-events", "1"]));
        let host = FakeHost::start(exchanges).await;
        let mut child = command(&host, &recording, step)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        tokio::time::timeout(Duration::from_secs(10), host.wait_seen(1))
            .await
            .expect("the watch connected");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(
            child.try_wait().unwrap().is_none(),
            "the watch stopped at the ready frame"
        );
        let interrupted = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(interrupted.success());
        let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", at(step, &out));
        // The ready line is shown (as recorded), and nothing else arrived.
        assert_eq!(text(&out.stdout), step.stdout, "{}", at(step, &out));
        assert_eq!(host.mismatches(), Vec::<String>::new());
    }
}
